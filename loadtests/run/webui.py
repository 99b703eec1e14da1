"""The suite in Locust's web UI: a "Triton (exact)" tab, start-up errors in the form, no Host field.

- The tab uses Locust's documented extension points: `extended_tabs` / `extended_tables`
  in the web UI's template arguments, and an `extended_stats` entry added to the
  /stats/requests response the UI polls. The rows come from the same merged numbers that
  the run directory is written from, so what an interactive user sees is what the report
  will show; after STOP they keep the finished test's numbers until the next one starts.
  Locust's page stops polling at its first answer that is not spawning/running, and Locust
  says stopped before the suite has finished the run: a /stats/requests in that gap waits
  until the final numbers are in (run/live.py's settle), so the page never keeps live ones.
- Start (POST /swarm) first runs the headless pre-flight on the form's options: a bad
  option or an unknown model answers `success: false` with the `error:` line, which
  Locust's form shows in red under its fields, and no test starts.
- A literal --header value is never in the page (loadtests/run/webui.py); a Start
  with the form as shown sends the real headers, and a header typed there keeps the commas
  of its value (`Accept: a,b` is one header, as on the command line).
- Locust's "Host" field sets HTTP users' base URL, which the suite's users do not read
  (they use --triton-http/--triton-grpc): the field is hidden, and the header's "Host"
  shows the Triton address(es) the classes load instead (the run wiring's environment.host).

The suite's options in Locust's web form: ordered and labelled as `python -m loadtests options`
lists them (loadtests/options/groups.py), and a start-up error shown at the field it names.

Locust draws the form from `window.templateArgs.extra_options`, which Flask serialises with
sorted keys (so the options come alphabetically), and labels each field with its generated
title plus the whole help text ("Triton Grpc (Triton gRPC endpoint; several ...)", cut off
by the field's width). Additions to the page, no change to Locust's bundle:

- before the bundle runs, a script re-orders `extra_options` by group and empties each help
  text (the field's label is then short);
- once the fields are drawn, each gets its written label, its help as a one-line hint (the
  whole text on hover) and, on the first field of a group, the group's name; a start-up
  error that names an option (`error: --rate ...`, or a model) is also shown under that field, which
  is scrolled into view. Attributes and CSS only: the nodes React draws are left to React;
- the "Custom parameters" accordion is opened once each time the form is drawn (a click on
  React's own control): the Workload and Model fields, first in it, are in view;
- the Model field gets the models Triton has ready as a `<datalist>` (an element of the page's
  own, bound by a `list` attribute), asked from `/triton-models` (run/webui_models.py) at each
  page load; a model with variable dims fills an empty Shape field with the --shape the route
  gives for it, with a hint saying so (a shape the user typed is never replaced).

    page = page.replace("</head>", HEAD + "</head>").replace("</body>", body_script() + "</body>")

The web UI's --header field: a literal value (a token) never reaches the page, a test started
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
import json
import re
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, before_render_template, jsonify, request
from locust.runners import STATE_RUNNING, STATE_SPAWNING
from werkzeug.datastructures import ImmutableMultiDict, MultiDict

from loadtests.config.security import redact_header
from loadtests.config.settings import Settings
from loadtests.errors import SpecError, StartupError
from loadtests.options.groups import GROUPS
from loadtests.run.live_snapshot import LiveSnapshot
from loadtests.run.preflight import Preflight
from loadtests.run.webui_models import ROUTE as MODELS_ROUTE
from loadtests.run.webui_models import ModelSuggestions
from loadtests.run.webui_report import ROUTE, WRITING
from loadtests.workloads.kinds import DEFAULT_USER_CLASS

TAB_KEY = "triton-exact"
COLUMNS = (
    ("endpoint", "Endpoint"),
    ("requests", "Requests"),
    ("failures", "Failures"),
    ("late", "Late (open loop)"),
    ("dropped", "Dropped"),
    ("inferences", "Inferences"),
    ("infer_now", "Infer/s now"),
    ("infer_run", "Infer/s run"),
    ("p50_ms", "p50 ms"),
    ("p90_ms", "p90 ms"),
    ("p95_ms", "p95 ms"),
    ("p99_ms", "p99 ms"),
    ("p99_interval_ms", "p99 95 % interval ms"),
    # A streamed endpoint (decoupled model); empty for the others.
    ("ttfr_p50_ms", "First response p50 ms"),
    ("ttfr_p99_ms", "First response p99 ms"),
    ("gap_p50_ms", "Gap p50 ms"),
    ("gap_p99_ms", "Gap p99 ms"),
    ("max_ms", "max ms"),
    ("mean_ms", "mean ms"),
    ("avg_batch", "Server avg batch"),
    ("queue_ms", "Server queue ms"),
    ("compute_infer_ms", "Server compute infer ms"),
    ("report", "Report"),  # after the test: a link to the suite's report (run/webui_report.py)
    ("run_dir", "Run directory"),
)


EXACT_HEADER = dict(COLUMNS)["avg_batch"]  # a header only the exact table has (the page's script finds it by it)

# Locust's form draws every field as an MUI TextField; the Host one is hidden by its input's name.
HIDE_HOST_FIELD = '<style>.MuiFormControl-root:has(input[name="host"]) { display: none; }</style>'


def install_exact_tab(web_ui, snapshot: Callable[[], LiveSnapshot], settle: Callable[[], None]) -> None:
    """The "Triton (exact)" tab: its columns, and its rows (`snapshot()`) in each /stats/requests.

    Each /stats/requests first calls `settle()`, which returns once a stopped test's final numbers
    are in (Locust's page stops polling at its first answer that is not spawning/running)."""
    web_ui.template_args["extended_tabs"] = [{"title": "Triton (exact)", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in COLUMNS]}
    ]

    @web_ui.app.before_request
    def _settle_stopped_test():
        if request.path == "/stats/requests":
            settle()

    @web_ui.app.after_request
    def _add_exact_stats(response):
        if request.path != "/stats/requests" or not response.is_json:
            return response
        payload = response.get_json()
        payload["extended_stats"] = [{"key": TAB_KEY, "data": snapshot().table_rows()}]
        response.set_data(json.dumps(payload))
        return response


def install(web_ui, snapshot: Callable[[], LiveSnapshot], preflight: Preflight, settle: Callable[[], None]) -> None:
    """Add the tab, the start-up check, the Model suggestions and the hidden Host field to Locust's web UI.

    At START, `preflight.check_web_start(form, classes)` runs the headless pre-flight on the
    form's option values and on the user classes the test will run (raises StartupError).
    """
    environment = web_ui.environment
    redaction = HeaderRedaction(environment.parsed_options)
    redaction.install(web_ui.app)
    ModelSuggestions(lambda: preflight.process.settings).install(web_ui.app, web_ui.auth_required_if_enabled)
    choice = WorkloadChoice(environment, web_ui.userclass_picker_is_active)
    if choice.by_field:  # the header's Host and the page: what START with the defaults runs
        preflight.choose_user_classes(lambda settings: choice.classes(ImmutableMultiDict(), settings))
    hidden = HIDE_HOST_FIELD + ("" if choice.by_field else HIDE_WORKLOAD_FIELD)
    install_exact_tab(web_ui, snapshot, settle)

    @web_ui.app.after_request
    def _hide_host_field(response: Response) -> Response:
        is_page = (request.endpoint or "").endswith("index") and response.mimetype == "text/html"
        if is_page and not response.direct_passthrough:
            page = response.get_data(as_text=True)
            page = page.replace("</head>", f"{hidden}{HEAD}</head>", 1)
            response.set_data(page.replace("</body>", f"{body_script()}</body>", 1))  # order, labels
        return response

    @web_ui.app.before_request
    def _check_start():
        # Locust answers "Swarming started" and reports a failing test_start only in its log;
        # the same checks as a headless run, here, put the error in the form instead.
        if request.method != "POST" or not request.path.endswith("/swarm"):
            return None
        # Locust and the pre-flight below both read request.form: --header is taken out of it
        # and set on the options (the real values, or the typed text split as the command line would).
        request.form = redaction.take_headers(request.form)
        # The hidden Host field only echoes the header's label (the run wiring's environment.host):
        # Locust would copy it into --host, which the suite reads as -H (--triton-http).
        request.form = ImmutableMultiDict([(k, v) for k, v in request.form.items(multi=True) if k != "host"])
        runner = environment.runner
        if runner is not None and runner.state in (STATE_SPAWNING, STATE_RUNNING):
            return None  # "Edit" of a running test: only users and spawn rate change
        form = request.form
        try:
            preflight.check_web_start(form, lambda settings: choice.classes(form, settings))
        except StartupError as error:
            return jsonify({"success": False, "message": f"error: {error}", "host": environment.host})
        return None


class WorkloadChoice:
    """Which user classes a test started from the form runs (what Locust runs and pre-flight prepares).

    - classes named on the command line: those (the form's Workload field is hidden);
    - --class-picker: the ticked ones (none ticked: every class, as Locust does);
    - neither: the form's Workload field (--user-class), one class, by default BertQAHttpUser, which
      runs on the demo Triton. Locust would run every class of the locustfile, the generic and
      sequence ones too, which cannot run without a model of their own.
    """

    def __init__(self, environment, picker: bool) -> None:
        self.environment = environment
        self.picker = picker
        named = getattr(environment.parsed_options, "user_classes", None)
        self.named: list[type] | None = list(environment.user_classes) if named else None

    @property
    def by_field(self) -> bool:
        """The Workload field decides (no class named, no picker)."""
        return not self.picker and self.named is None

    def classes(self, form: MultiDict, settings: Settings) -> list[type]:
        """The classes a START with this form runs; raises SpecError for an unknown --user-class."""
        available = dict(self.environment.available_user_classes or {})
        if self.picker:
            ticked = form.getlist("user_classes")
            return [cls for name, cls in available.items() if name in ticked] or list(available.values())
        if self.named is not None:
            return self.named
        name = settings.user_class or DEFAULT_USER_CLASS
        if name not in available:
            raise SpecError(f"--user-class {name}: not a user class here (the classes: {', '.join(sorted(available))})")
        return [available[name]]


HIDE_WORKLOAD_FIELD = '<style>.MuiFormControl-root:has([name="userClass"]) { display: none; }</style>'

HEAD = """<style>
[data-suite-label] > span { display: none; }
label[data-suite-label] { font-size: 0; overflow: visible; }
label[data-suite-label]::after { content: attr(data-suite-label); font-size: 1rem; line-height: 1.4375; }
.MuiFormControlLabel-label[data-suite-label] { font-size: 0; }
.MuiFormControlLabel-label[data-suite-label]::after { content: attr(data-suite-label); font-size: 1rem; }
legend[data-suite-label]::after { content: attr(data-suite-label); font-size: 0.75em; visibility: hidden;
  padding: 0 5px; display: inline-block; }
[data-suite-help]::after { content: attr(data-suite-help); font-size: 0.75rem; opacity: 0.7; margin: 3px 14px 0;
  display: block; white-space: normal; overflow: visible; }
[data-suite-group] { position: relative; margin-top: 34px !important; }
[data-suite-group]::before { content: attr(data-suite-group); position: absolute; top: -30px; left: 0;
  font-weight: 600; font-size: 1rem; white-space: nowrap; }
[data-suite-table] th, [data-suite-table] td { padding: 6px; }
[data-suite-table] td:last-child { overflow-wrap: anywhere; min-width: 10em; }
[data-suite-link] { font-size: 0 !important; cursor: pointer; }
[data-suite-link]::after { content: "report.html"; font-size: 0.875rem; color: #1976d2; text-decoration: underline; }
[data-suite-error]::after { content: attr(data-suite-error); color: #d32f2f; opacity: 1; }
</style>"""

_SCRIPT = r"""<script>
(function () {
  const FIELDS = __FIELDS__;
  const args = window.templateArgs || {};
  const given = args.extra_options || {};
  const ordered = {};
  for (const f of FIELDS) {
    if (f.key in given) { ordered[f.key] = Object.assign({}, given[f.key], {help_text: ""}); }
  }
  for (const key of Object.keys(given)) { if (!(key in ordered)) { ordered[key] = given[key]; } }
  args.extra_options = ordered;
  const help = {};
  for (const f of FIELDS) {
    // argparse's help doubles a percent sign; the variable's name has its own place (python -m loadtests options).
    const text = ((given[f.key] || {}).help_text || "").replace(/ \[env [A-Z_]+\]$/, "");
    help[f.key] = text.replace(/%%/g, "%");
  }
  const note = {};  // a one-line hint in place of a field's help (the Shape the page filled, the ready models)
  const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
  function container(name) {
    const input = document.querySelector('[name="' + name + '"]');
    return input && input.closest('.MuiFormControl-root, .MuiFormControlLabel-root');
  }
  function decorate() {
    let seen = null;
    for (const f of FIELDS) {
      const box = container(camel(f.key));
      if (!box || getComputedStyle(box).display === 'none') { continue; }  // (the Workload field, when hidden)
      for (const el of box.querySelectorAll('label, legend, .MuiFormControlLabel-label')) {
        el.setAttribute('data-suite-label', f.label);
      }
      if (!box.hasAttribute('data-suite-error')) { box.setAttribute('data-suite-help', note[f.key] || help[f.key]); }
      box.setAttribute('title', help[f.key]);
      if (f.group !== seen) { box.setAttribute('data-suite-group', f.group); seen = f.group; }
    }
  }
  let shown = "";
  function showError() {
    const alert = document.querySelector('.MuiAlert-standardError, .MuiAlert-colorError');
    const text = alert ? alert.textContent : "";
    if (text === shown) { return; }
    shown = text;
    for (const box of document.querySelectorAll('[data-suite-error]')) { box.removeAttribute('data-suite-error'); }
    // The option the line names (--rate ...), or the model of "model 'x' is not ready ...".
    const named = /--([a-z][a-z0-9-]*)/.exec(text) || (/model '/.test(text) ? [null, 'model'] : null);
    const box = named && container(camel(named[1].replace(/-/g, '_')));
    if (!box) { return; }
    box.setAttribute('data-suite-error', text);
    box.setAttribute('data-suite-help', text);
    box.scrollIntoView({block: 'center'});
  }
  // The exact tab shows only the columns that apply to this run: a column whose every cell is
  // empty (streaming cells of a model that does not stream, Late/Dropped in closed loop, Infer/s
  // now after the test) is hidden, so the server's columns fit at 1,400 px without a scroll bar.
  let hidden = null;
  function fitTable() {
    const table = [...document.querySelectorAll('table')].find(
      t => [...t.querySelectorAll('thead th')].some(th => th.textContent.trim() === __EXACT_HEADER__));
    if (!table) { return; }
    table.setAttribute('data-suite-table', '');
    const rows = [...table.querySelectorAll('tbody tr')];
    const empty = [...table.querySelectorAll('thead th')].map((_, i) => i + 1).filter(n => rows.length && rows.every(
      row => !row.children[n - 1] || row.children[n - 1].textContent.trim() === ''));
    const css = empty.map(n => `[data-suite-table] tr > :nth-child(${n}) { display: none; }`).join('\n');
    if (!hidden) { hidden = document.createElement('style'); document.head.appendChild(hidden); }
    if (hidden.textContent !== css) { hidden.textContent = css; }
    linkReports(table, rows);
  }
  // The Report cell links to the report: an attribute and a click on the cell React draws, its
  // text left to React (replacing React's nodes froze the tab at the next test). Locust stops
  // polling soon after a test stops, while the report may still be being written: a cell that
  // says so asks the suite itself until the report is there.
  const REPORT = __REPORT_ROUTE__;
  const WRITING = __REPORT_WRITING__;
  let asking = false;
  function reportCells(table, rows) {
    const at = [...table.querySelectorAll('thead th')].findIndex(th => th.textContent.trim() === 'Report');
    return at < 0 ? [] : rows.map(row => row.children[at]).filter(cell => cell);
  }
  function link(cell, address) {
    if (cell.getAttribute('data-suite-link') === address) { return; }
    cell.setAttribute('data-suite-link', address);
    cell.setAttribute('role', 'link');
    cell.setAttribute('tabindex', '0');
    cell.onclick = () => window.open(cell.getAttribute('data-suite-link'), '_blank');
  }
  function linkReports(table, rows) {
    const cells = reportCells(table, rows);
    for (const cell of cells) {
      const text = cell.textContent;
      if (text.startsWith(REPORT + '/')) { link(cell, text); }
      else if (text !== WRITING && cell.hasAttribute('data-suite-link')) {
        for (const name of ['data-suite-link', 'role', 'tabindex']) { cell.removeAttribute(name); }
        cell.onclick = null;
      }
    }
    const waiting = cells.filter(c => c.textContent === WRITING && !c.hasAttribute('data-suite-link'));
    if (asking || !waiting.length) { return; }
    asking = true;
    setTimeout(async () => {
      try {
        const answer = await (await fetch(REPORT + '/latest')).json();
        if (answer.report.startsWith(REPORT + '/')) { waiting.forEach(cell => link(cell, answer.report)); }
      } finally {
        asking = false;
        fitTable();
      }
    }, 1000);
  }
  // The Custom parameters hold the Workload and Model fields a newcomer has to find: each time
  // Locust draws the form, its accordion is opened once, by a click on React's own control
  // (closed again by the user, it stays closed).
  const opened = new WeakSet();
  function openCustomParameters() {
    for (const summary of document.querySelectorAll('.MuiAccordionSummary-root[aria-expanded="false"]')) {
      if (opened.has(summary) || summary.textContent.trim() !== 'Custom parameters') { continue; }
      opened.add(summary);
      summary.click();
    }
  }
  // The Model field suggests the models Triton has ready (asked once per page load, so a reload
  // shows a Triton started since, or a model loaded since), in a <datalist> outside React's nodes.
  // A model with variable dims fills the Shape field with the --shape the suite's own refusal
  // suggests (the route says it, loadtests/run/webui_models.py), unless the user typed a shape.
  const MODELS = __MODELS_ROUTE__;
  const models = document.createElement('datalist');
  models.id = 'suite-models';
  document.body.appendChild(models);
  const shapes = {};
  let filled = null;  // what the page last put into the Shape field
  const typedIn = new WeakSet();  // Shape fields the user typed in: never filled again
  fetch(MODELS).then(answer => answer.json()).catch(() => ({models: []})).then(answer => {
    for (const model of answer.models || []) {
      const option = document.createElement('option');
      option.value = model.name;
      models.appendChild(option);
      shapes[model.name] = model.shape;
    }
    const count = models.children.length;
    note.model = count ? `${help.model}; Triton has ${count} ready: click the field to pick one` : '';
    models.setAttribute('data-suite-answered', '');
    fillShape();
  });
  function bindModels() {
    const field = document.querySelector('input[name="model"]');
    if (field && field.getAttribute('list') !== models.id) { field.setAttribute('list', models.id); }
  }
  function fillShape() {
    const field = document.querySelector('input[name="model"]');
    const shape = document.querySelector('input[name="shape"]');
    if (!field || !shape || typedIn.has(shape) || (shape.value !== '' && shape.value !== filled)) { return; }
    const model = field.value.trim();
    const wanted = shapes[model] || '';
    const hint = wanted ? `filled from ${model}'s metadata (its variable dims); type over it for other sizes` : '';
    if (shape.value === wanted && note.shape === hint) { return; }
    note.shape = hint;
    if (shape.value !== wanted) {
      filled = wanted;
      // The value through the input's own setter and an input event: MUI then sees the field filled.
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(shape, wanted);
      shape.dispatchEvent(new Event('input', {bubbles: true}));
    }
    decorate();
  }
  document.addEventListener('input', (event) => {
    const name = event.target && event.target.name;
    if (name === 'model') { fillShape(); }
    if (name === 'shape' && event.isTrusted) {
      typedIn.add(event.target);
      note.shape = '';
      decorate();
    }
  }, true);
  new MutationObserver(() => {
    decorate(); showError(); fitTable(); openCustomParameters(); bindModels(); fillShape();
  })
    .observe(document.documentElement, {childList: true, subtree: true, characterData: true});
})();
</script>"""


def body_script() -> str:
    """The script that orders and labels the form (placed after Locust's templateArgs)."""
    fields = [
        {"key": dest, "label": label, "group": group} for group, _about, options in GROUPS for dest, label in options
    ]
    names = {"__EXACT_HEADER__": EXACT_HEADER, "__REPORT_ROUTE__": ROUTE, "__REPORT_WRITING__": WRITING}
    names["__MODELS_ROUTE__"] = MODELS_ROUTE
    names["__FIELDS__"] = fields
    script = _SCRIPT
    for name, value in names.items():
        script = script.replace(name, json.dumps(value).replace("</", "<\\/"))
    return script


def with_current_values(args: dict, options: argparse.Namespace) -> dict:
    """Locust's template arguments with each option's field holding its current value.

    Locust re-parses the command line for the form's values each time it renders the page, so a
    reload showed the command line's --run-dir, not the one a START from the form used; the
    options Locust applied the form to hold what it used.
    """
    extra_options = {
        key: {**entry, "default_value": getattr(options, key)} if hasattr(options, key) else entry
        for key, entry in (args.get("extra_options") or {}).items()
    }
    return {**args, "extra_options": extra_options}


OPTION = "header"
# A comma that starts the next header: a header name (RFC 9110 token) and a colon follow it.
NEXT_HEADER = re.compile(r",\s*(?=[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*:(?!//))")


class HeaderRedaction:
    """Renders the form with the options' current values, --header redacted, and restores the
    header from the form the page posts."""

    def __init__(self, options: argparse.Namespace | None) -> None:
        self.options = options
        self.shown: list[str] | str | None = None  # the real value behind the page last rendered

    def install(self, app: Flask) -> None:
        # Flask's own hook between Locust's update of its template arguments and the rendering:
        # the page is the only place Locust puts option values (its report and JSON hold none).
        before_render_template.connect(self.on_render, app, weak=False)

    def on_render(self, _app: Flask, template: Any = None, context: dict | None = None, **_extra: Any) -> None:
        args = (context or {}).get("template_args") or {}
        if context is not None and self.options is not None:
            # The form as the last START left it: Locust fills it from the command line each time.
            args = context["template_args"] = with_current_values(args, self.options)
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
