"""The commands a report suggests, built from what the run used, so that each runs as pasted.

A suggested command repeats the run's Triton addresses, its TLS files and headers, its user
classes or protocol, and the options that shape its requests (shapes, batch size, payload
format) and the user class; it adds only the change it suggests. A header whose value was given
literally is never written (config.json holds it redacted): the command reads it from an
environment variable named after the header, which `header_variables` lists for the reader.

    commands = RunCommands.of(data.run.config)
    commands.loadtests("sweep", "my_model", ["--concurrency", concurrency_range(16)])
    commands.locust(["--processes", "-1"], users=8)
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

# config.json's options a command repeats when they differ from the default: (flag, key, default).
PAYLOAD_OPTIONS = (
    ("--shape", "shape", ""),
    ("--batch-size", "batch_size", "1"),
    ("--seq-len", "seq_len", "384"),
    ("--input-data", "input_data", None),
    ("--image-format", "image_format", "tensor"),
    ("--data-mode", "data_mode", "random"),
)
TARGET_OPTIONS = (
    ("--triton-http", "triton_http"),
    ("--triton-grpc", "triton_grpc"),
    ("--triton-metrics", "triton_metrics"),
)
TLS_OPTIONS = (("--ssl-ca", "ssl_ca"), ("--ssl-cert", "ssl_cert"), ("--ssl-key", "ssl_key"))
REDACTED = "<redacted>"  # how config.json writes a literal header value (loadtests/config/security.py)
# A --header value that names where the secret is, written as given.
REFERENCE_PREFIXES = ("env:", "file:")


def header_variable(name: str) -> str:
    """The environment variable a suggested command reads a literal header from.

    >>> header_variable("X-Api-Key")
    'TRITON_HEADER_X_API_KEY'
    """
    return "TRITON_HEADER_" + re.sub(r"[^A-Za-z0-9]+", "_", name.strip()).upper()


def concurrency_range(peak: int, levels: int = 8) -> str:
    """A START:END:STEP range that reaches `peak` itself in about `levels` steps: from 1 when a
    step near peak / levels divides the way there, else from the first multiple that does.

    >>> concurrency_range(64), concurrency_range(8), concurrency_range(18), concurrency_range(1)
    ('1:64:7', '1:8:1', '2:18:2', '1:1:1')
    """
    peak = max(1, int(peak))
    if peak <= levels:
        return f"1:{peak}:1"
    span, target = peak - 1, (peak - 1) / levels
    near = [d for d in range(1, span + 1) if span % d == 0 and 0.6 * target <= d <= 1.6 * target]
    if near:
        return f"1:{peak}:{min(near, key=lambda d: (abs(d - target), -d))}"
    step = max(1, round(peak / levels))
    return f"{peak - step * ((peak - 1) // step)}:{peak}:{step}"


@dataclass(frozen=True)
class RunCommands:
    """The run's own options, to build commands from (config.json's `options` and user classes)."""

    options: dict
    user_classes: tuple[str, ...]

    @classmethod
    def of(cls, config: dict | None) -> RunCommands:
        config = config or {}
        options = config.get("options") or {}
        classes = config.get("user_classes") or options.get("user_classes") or ()
        return cls(options, tuple(classes))

    @property
    def protocols(self) -> tuple[str, ...]:
        found = {"grpc" if "Grpc" in name else "http" for name in self.user_classes}
        return tuple(sorted(found)) or ("http",)

    def target(self) -> list[str]:
        """Where the run sent its requests, and how: addresses, TLS files, headers."""
        words = []
        for flag, key in TARGET_OPTIONS:
            if self.options.get(key):
                words += [flag, str(self.options[key])]
        for flag, key in TLS_OPTIONS:
            if self.options.get(key):
                words += [flag, str(self.options[key])]
        if self.options.get("ssl_insecure"):
            words.append("--ssl-insecure")
        for header in self.options.get("header") or []:
            words += ["--header", self._header(str(header))]
        return words

    def header_variables(self) -> list[str]:
        """The variables the commands read literal headers from (export them before pasting)."""
        return [header_variable(text.partition(":")[0]) for text in map(str, self.options.get("header") or [])
                if text.partition(":")[2].strip() == REDACTED]  # fmt: skip

    @staticmethod
    def _header(text: str) -> str:
        name, _, value = text.partition(":")
        value = value.strip()
        if value.startswith(REFERENCE_PREFIXES):
            return f"{name.strip()}: {value}"
        return f"{name.strip()}: env:{header_variable(name)}"

    def payload(self) -> list[str]:
        """What shaped the run's requests (the options that differ from their defaults)."""
        words = []
        for flag, key, default in PAYLOAD_OPTIONS:
            value = self.options.get(key)
            if value not in (None, "", default) and str(value) != str(default):
                words += [flag, str(value)]
        if self.options.get("http_json") and "http" in self.protocols:
            words.append("--http-json")
        return words

    def user_class(self, protocols: tuple[str, ...] = ()) -> list[str]:
        """How sweep, capacity and tune pick the run's user class for a model sent over
        `protocols`: the class itself when the run had one for them, else --protocol."""
        protocols = protocols or self.protocols
        classes = [name for name in self.user_classes if ("grpc" if "Grpc" in name else "http") in protocols]
        if len(classes) == 1:
            return ["--user-class", classes[0]]
        return ["--protocol", "both" if len(protocols) > 1 else protocols[0]] if tuple(protocols) != ("http",) else []

    def loadtests(
        self,
        command: str,
        model: str,
        extra: list[str],
        protocols: tuple[str, ...] = (),
        payload: list[str] | None = None,
    ) -> str:
        """`python -m loadtests COMMAND --model MODEL EXTRA`, with the run's user class (or
        protocol), payload and target."""
        words = ["python", "-m", "loadtests", command, "--model", model, *extra]
        if "--protocol" not in extra:
            words += self.user_class(protocols)
        words += self.payload() if payload is None else payload
        return shlex.join([*words, *self.target()])

    def locust(
        self, extra: list[str], users: int | None = None, run_time: str = "1m", classes: list[str] | None = None,
        model: str | None = None, payload: list[str] | None = None,
    ) -> str:  # fmt: skip
        """The run's own locust command (its classes, users, model and traffic) with `extra` added."""
        options = self.options
        words = ["locust", "-f", "locustfile.py", "--headless", *extra]
        words += ["-u", str(users or options.get("num_users") or 4), "-t", run_time]
        words += list(classes if classes is not None else self.user_classes)
        chosen = model if model is not None else options.get("model")
        if chosen:
            words += ["--model", str(chosen)]
        elif options.get("mix"):
            words += ["--mix", str(options["mix"])]
        traffic = options.get("traffic")
        if traffic and traffic != "closed":
            words += ["--traffic", str(traffic)]
            if options.get("rate"):
                words += ["--rate", f"{float(options['rate']):g}"]
        words += self.payload() if payload is None else payload
        return shlex.join([*words, *self.target()])
