"""A literal --header value (a token) never reaches the web UI, and a test started there still sends it.

Locust's page embeds every custom option's current value in its source (`extra_options` in
`window.templateArgs`); `is_secret=True` only masks the field on screen, so anyone who opens
the web UI could read a literal `--header "Authorization: Bearer ..."` from the page. The page
is rendered with the header redacted instead (`Authorization: <redacted>`; `env:`/`file:`
references as written, they hold no secret), and a Start whose form still holds that
redacted text means "the headers as given": the real values are put back before Locust
applies the form, so the run sends them.

    redaction = HeaderRedaction(environment.parsed_options)
    redaction.install(web_ui.app)                 # the page: redacted
    form = redaction.restore(request.form)        # at POST /swarm, before the form is applied
"""

from __future__ import annotations

import argparse
import copy
from typing import Any

from flask import Flask, before_render_template
from werkzeug.datastructures import ImmutableMultiDict, MultiDict

from loadtests.connection_security import redact_header

OPTION = "header"


class HeaderRedaction:
    """Redacts --header in the page it renders and restores it from the form the page posts."""

    def __init__(self, options: argparse.Namespace | None) -> None:
        self.options = options
        self.shown: list[str] | str | None = None  # the real value behind the page last rendered

    def install(self, app: Flask) -> None:
        # Flask's own hook between Locust's update of its template arguments and the rendering:
        # the page is the only place Locust puts option values (its report and JSON hold none).
        before_render_template.connect(self.on_render, app, weak=False)

    def on_render(self, _app: Flask, template: Any = None, context: dict | None = None, **_extra: Any) -> None:
        args = (context or {}).get("template_args") or {}
        extra_options = args.get("extra_options") or {}
        entry = extra_options.get(OPTION)
        if entry is None or context is None:
            return
        self.shown = entry["default_value"]
        # Copies: Locust's own template_args keep the real value for nothing else to read.
        redacted_entry = {**entry, "default_value": redacted(self.shown)}
        context["template_args"] = {**args, "extra_options": {**extra_options, OPTION: redacted_entry}}

    def restore(self, form: MultiDict) -> MultiDict:
        """The form without --header if it holds the redacted text the page showed (the options
        get the real values back); any other text is what the user typed, and stays."""
        posted = form.get(OPTION)
        if posted is None or self.shown is None or self.options is None:
            return form
        if posted != as_form_text(redacted(self.shown)):
            return form
        setattr(self.options, OPTION, copy.copy(self.shown))
        return ImmutableMultiDict([(key, value) for key, value in form.items(multi=True) if key != OPTION])


def redacted(value: list[str] | str | None) -> list[str] | str | None:
    """--header's value (a list from the command line, a string from the environment) as shown."""
    if isinstance(value, list | tuple):
        return [redact_header(text) for text in value]
    return redact_header(value) if value else value


def as_form_text(value: list[str] | str | None) -> str:
    """What the browser posts for a field whose default is `value` (React joins a list with commas)."""
    if isinstance(value, list | tuple):
        return ",".join(value)
    return "" if value is None else str(value)
