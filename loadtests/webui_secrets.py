"""The web UI's --header field: a literal value (a token) never reaches the page, a test started
there still sends it, and a header typed there is read as the command line reads it.

Locust's page embeds every custom option's current value in its source (`extra_options` in
`window.templateArgs`); `is_secret=True` only masks the field on screen, so anyone who opens
the web UI could read a literal `--header "Authorization: Bearer ..."` from the page. The page
is rendered with the header redacted instead (`Authorization: <redacted>`; `env:`/`file:`
references as written, they hold no secret), and a Start whose form still holds that
redacted text means "the headers as given": the real values are put back before Locust
applies the form, so the run sends them.

The field is one line of text (Locust joins a list with commas), and Locust's /swarm would
split it at every comma: `Accept: a,b` would become `Accept: a` and a broken `b`, where
`--header "Accept: a,b"` is one header. So the suite takes the field out of the form and sets
the option itself: a comma starts a new header only where a header name and a colon follow it
(`A: 1,B: 2` is two headers, `Accept: a,b` one); a colon followed by `//` is a URL's, not a header's.

    redaction = HeaderRedaction(environment.parsed_options)
    redaction.install(web_ui.app)                 # the page: redacted
    form = redaction.take_headers(request.form)   # at POST /swarm, before the form is applied
"""

from __future__ import annotations

import argparse
import copy
import re
from typing import Any

from flask import Flask, before_render_template
from werkzeug.datastructures import ImmutableMultiDict, MultiDict

from loadtests.connection_security import redact_header

OPTION = "header"
# A comma that starts the next header: a header name (RFC 9110 token) and a colon follow it.
NEXT_HEADER = re.compile(r",\s*(?=[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*:(?!//))")


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

    def take_headers(self, form: MultiDict) -> MultiDict:
        """The form without --header, which goes to the options: the real values if the field
        holds the redacted text the page showed, else the text typed, split into headers
        (`form_headers`)."""
        posted = form.get(OPTION)
        if posted is None or self.options is None:
            return form
        if self.shown is not None and posted == as_form_text(redacted(self.shown)):
            setattr(self.options, OPTION, copy.copy(self.shown))
        else:
            setattr(self.options, OPTION, form_headers(posted))
        return ImmutableMultiDict([(key, value) for key, value in form.items(multi=True) if key != OPTION])


def form_headers(text: str) -> list[str]:
    """The headers in the form's one line: split where a comma is followed by the next `Name:`.

    >>> form_headers("Accept: a,b, X-Key: env:KEY,Referer: https://x/?a,b")
    ['Accept: a,b', 'X-Key: env:KEY', 'Referer: https://x/?a,b']
    """
    return [item.strip() for item in NEXT_HEADER.split(text) if item.strip()]


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
