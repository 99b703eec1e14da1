"""The prepared endpoints of one process: built once per (workload, protocol), first user waits."""

from __future__ import annotations

import logging
from collections.abc import Callable

from gevent.lock import Semaphore

from loadtests.clients import Connections, open_client
from loadtests.endpoints import Endpoint, model_name_for, prepare_endpoint
from loadtests.errors import StartupError
from loadtests.settings import Settings

logger = logging.getLogger(__name__)


class EndpointCache:
    """Endpoints of the selected user classes, prepared against the current settings."""

    def __init__(
        self, user_classes: list[type], settings: Callable[[], Settings], request_event, connections: Connections
    ) -> None:
        self.user_classes = user_classes
        self.settings = settings
        self.request_event = request_event
        self.connections = connections
        self.prepared: dict[tuple[str, str], Endpoint] = {}
        self._locks: dict[tuple[str, str], Semaphore] = {}

    def classes(self) -> list[type]:
        """The selected user classes that are the suite's (they name a workload)."""
        return [cls for cls in self.user_classes if getattr(cls, "workload", None)]

    def kinds(self) -> set[str]:
        return {cls.workload for cls in self.classes()}

    def models(self) -> list[str]:
        """The models the run targets (a class whose model cannot be named is left to pre-flight)."""
        models = set()
        for kind in self.kinds():
            try:
                models.add(model_name_for(kind, self.settings(), self.kinds()))
            except StartupError:
                continue
        return sorted(models)

    def names(self) -> dict[str, str]:
        """Endpoint name -> model of every selected user class, as prepare_endpoint names them."""
        names = {endpoint.name: endpoint.model.name for endpoint in self.prepared.values()}
        for cls in self.classes():
            try:
                model = model_name_for(cls.workload, self.settings(), self.kinds())
            except StartupError:
                continue  # pre-flight reports it
            names.setdefault(f"{model} [{cls.protocol}]", model)
        return names

    def endpoint(self, kind: str, protocol: str) -> Endpoint:
        """The prepared endpoint for a user class; raises StartupError."""
        key = (kind, protocol)
        with self._locks.setdefault(key, Semaphore()):
            if key not in self.prepared:
                settings = self.settings()
                model = model_name_for(kind, settings, self.kinds())
                client = open_client(protocol, settings, self.request_event, self.connections)
                try:
                    self.prepared[key] = prepare_endpoint(kind, client, model, settings)
                finally:
                    client.close()
                logger.info("prepared %s: batch sizes %s", self.prepared[key].name, settings.batch_size.text)
        return self.prepared[key]

    def prepare_all(self) -> None:
        """Pre-flight: every selected class's endpoint; raises StartupError."""
        for cls in self.classes():
            self.endpoint(cls.workload, cls.protocol)

    def clear(self) -> None:
        self.prepared.clear()
