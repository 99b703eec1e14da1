"""The prepared endpoints of one process: built once per (workload, protocol), first user waits.

With --mix, the generic classes' endpoint is a `MixedEndpoint` (one endpoint per model of
the mix, picked by weight per request): loadtests/workloads/mix.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from gevent.lock import Semaphore

from loadtests.clients import Connections, open_client
from loadtests.config.settings import Settings
from loadtests.errors import StartupError
from loadtests.workloads.endpoints import Endpoint, prepare_endpoint
from loadtests.workloads.kinds import WorkloadKind
from loadtests.workloads.mix import MixedEndpoint, check_mix_applies, prepare_mix

logger = logging.getLogger(__name__)


class EndpointCache:
    """Endpoints of the selected user classes, prepared against the current settings."""

    def __init__(
        self,
        user_classes: Callable[[], list[type]],
        settings: Callable[[], Settings],
        request_event,
        connections: Connections,
    ) -> None:
        # Asked each time: the web UI's class picker and Workload field choose them per test.
        self.user_classes = user_classes
        self.settings = settings
        self.request_event = request_event
        self.connections = connections
        self.prepared: dict[tuple[WorkloadKind, str], Endpoint | MixedEndpoint] = {}
        self._locks: dict[tuple[WorkloadKind, str], Semaphore] = {}

    def classes(self) -> list[type]:
        """The selected user classes that run the suite's workload (they carry a workload kind and
        have no task of their own: a class whose own tasks send needs no endpoint)."""
        return [
            cls
            for cls in self.user_classes()
            if isinstance(getattr(cls, "kind", None), WorkloadKind) and getattr(cls, "runs_workload", True)
        ]

    def own_tasks(self) -> list[type]:
        """The selected user classes of the suite whose own tasks send (they name models as they run)."""
        return [cls for cls in self.user_classes() if getattr(cls, "runs_workload", True) is False]

    def kinds(self) -> set[WorkloadKind]:
        return {cls.kind for cls in self.classes()}

    def models(self) -> list[str]:
        """The models the run targets (a class whose model cannot be named is left to pre-flight)."""
        return sorted(set(self._class_models().values()).union(*self._class_models_of_mix().values()))

    def names(self) -> dict[str, str]:
        """Endpoint name -> model of every selected user class, as prepare_endpoint names them."""
        names = {endpoint.name: endpoint.model.name for target in self.prepared.values() for endpoint in _parts(target)}
        for cls, model in self._class_models().items():
            names.setdefault(f"{model} [{cls.protocol}]", model)
        for cls, models in self._class_models_of_mix().items():
            for model in models:
                names.setdefault(f"{model} [{cls.protocol}]", model)
        return names

    def streamed(self) -> set[str]:
        """The prepared endpoints whose model is decoupled (their requests are streamed)."""
        return {endpoint.name for target in self.prepared.values() for endpoint in _parts(target) if endpoint.streams}

    def payloads(self) -> dict[str, dict]:
        """Endpoint name -> what its requests carry (the prepared endpoints that say; config.json)."""
        return {
            endpoint.name: endpoint.payload
            for target in self.prepared.values()
            for endpoint in _parts(target)
            if endpoint.payload is not None
        }

    def _class_models(self) -> dict[type, str]:
        """Each selected class's one model (classes that take the --mix, or cannot name one, left out)."""
        out = {}
        mix = self.settings().mix
        for cls in self.classes():
            if mix is not None and cls.kind.takes_mix:
                continue
            try:
                out[cls] = cls.kind.model_name(self.settings(), self.kinds())
            except StartupError:
                continue  # pre-flight reports it
        return out

    def _class_models_of_mix(self) -> dict[type, tuple[str, ...]]:
        mix = self.settings().mix
        if mix is None:
            return {}
        return {cls: mix.models for cls in self.classes() if cls.kind.takes_mix}

    def endpoint(self, kind: WorkloadKind, protocol: str) -> Endpoint | MixedEndpoint:
        """The prepared endpoint for a user class (a mix's, for the generic classes with --mix);
        raises StartupError."""
        key = (kind, protocol)
        with self._locks.setdefault(key, Semaphore()):
            if key not in self.prepared:
                self.prepared[key] = self._prepare(kind, protocol, self.settings())
        return self.prepared[key]

    def _prepare(self, kind: WorkloadKind, protocol: str, settings: Settings) -> Endpoint | MixedEndpoint:
        if settings.mix is not None:
            check_mix_applies({cls.__name__: cls.kind for cls in self.classes()})
        client = open_client(protocol, settings, self.request_event, self.connections)
        try:
            if settings.mix is not None:
                return prepare_mix(client, settings.mix, settings)
            endpoint = prepare_endpoint(kind, client, kind.model_name(settings, self.kinds()), settings)
        finally:
            client.close()
        logger.info("prepared %s: batch sizes %s", endpoint.name, settings.batch_size.text)
        return endpoint

    def prepare_all(self) -> None:
        """Pre-flight: every selected class's endpoint; raises StartupError."""
        for cls in self.classes():
            self.endpoint(cls.kind, cls.protocol)

    def clear(self) -> None:
        self.prepared.clear()


def _parts(target: Endpoint | MixedEndpoint) -> tuple[Endpoint, ...]:
    return target.endpoints if isinstance(target, MixedEndpoint) else (target,)
