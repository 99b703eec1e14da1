"""The suite's options in Locust's web form: ordered and labelled as `python -m loadtests options`
lists them (loadtests/option_groups.py), and a start-up error shown at the field it names.

Locust draws the form from `window.templateArgs.extra_options`, which Flask serialises with
sorted keys (so the options come alphabetically), and labels each field with its generated
title plus the whole help text ("Triton Grpc (Triton gRPC endpoint; several ...)", cut off
by the field's width). Two additions to the page, no change to Locust's bundle:

- before the bundle runs, a script re-orders `extra_options` by group and empties each help
  text (the field's label is then short);
- once the fields are drawn, each gets its written label, its help as a one-line hint (the
  whole text on hover) and, on the first field of a group, the group's name; a start-up
  error that names an option (`error: --rate ...`, or a model) is also shown under that field, which
  is scrolled into view. Attributes and CSS only: the nodes React draws are left to React.

    page = page.replace("</head>", HEAD + "</head>").replace("</body>", body_script() + "</body>")
"""

from __future__ import annotations

import json

from loadtests.option_groups import GROUPS

HEAD = """<style>
[data-suite-label] > span { display: none; }
label[data-suite-label] { font-size: 0; overflow: visible; }
label[data-suite-label]::after { content: attr(data-suite-label); font-size: 1rem; line-height: 1.4375; }
.MuiFormControlLabel-label[data-suite-label] { font-size: 0; }
.MuiFormControlLabel-label[data-suite-label]::after { content: attr(data-suite-label); font-size: 1rem; }
legend[data-suite-label]::after { content: attr(data-suite-label); font-size: 0.75em; visibility: hidden;
  padding: 0 5px; display: inline-block; }
[data-suite-help]::after { content: attr(data-suite-help); font-size: 0.75rem; opacity: 0.7; margin: 3px 14px 0;
  display: -webkit-box; -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; }
[data-suite-group] { position: relative; margin-top: 34px !important; }
[data-suite-group]::before { content: attr(data-suite-group); position: absolute; top: -30px; left: 0;
  font-weight: 600; font-size: 1rem; white-space: nowrap; }
[data-suite-error]::after { content: attr(data-suite-error); color: #d32f2f; opacity: 1; -webkit-line-clamp: 6; }
</style>"""

_SCRIPT = r"""<script>
(function () {
  const FIELDS = %s;
  const args = window.templateArgs || {};
  const given = args.extra_options || {};
  const ordered = {};
  for (const f of FIELDS) {
    if (f.key in given) { ordered[f.key] = Object.assign({}, given[f.key], {help_text: ""}); }
  }
  for (const key of Object.keys(given)) { if (!(key in ordered)) { ordered[key] = given[key]; } }
  args.extra_options = ordered;
  const help = {};
  for (const f of FIELDS) { help[f.key] = ((given[f.key] || {}).help_text || "").replace(/ \[env [A-Z_]+\]$/, ""); }
  const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
  function container(name) {
    const input = document.querySelector('[name="' + name + '"]');
    return input && input.closest('.MuiFormControl-root, .MuiFormControlLabel-root');
  }
  function decorate() {
    let seen = null;
    for (const f of FIELDS) {
      const box = container(camel(f.key));
      if (!box) { continue; }
      for (const el of box.querySelectorAll('label, legend, .MuiFormControlLabel-label')) {
        el.setAttribute('data-suite-label', f.label);
      }
      if (!box.hasAttribute('data-suite-error')) { box.setAttribute('data-suite-help', help[f.key]); }
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
  new MutationObserver(() => { decorate(); showError(); })
    .observe(document.documentElement, {childList: true, subtree: true});
})();
</script>"""


def body_script() -> str:
    """The script that orders and labels the form (placed after Locust's templateArgs)."""
    fields = [
        {"key": dest, "label": label, "group": group} for group, _about, options in GROUPS for dest, label in options
    ]
    return _SCRIPT % json.dumps(fields).replace("</", "<\\/")
