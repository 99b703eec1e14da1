"""The "Triton (exact)" tab's charts and health line: the run over time, drawn under the table.

The page asks the suite itself, not Locust's /stats/requests (whose polls stop when Locust marks
a test stopped, before the suite has its final numbers):

    GET /triton-live/series?after=N   # the points after the N-th (run/live_series.py), and
                                      # {"health": [...]}: the health line's sentences

The health line says, while the test runs, what the report's first line will say (the outcome of
the requests so far: loadtests/run_format/outcome.py's sentence) and under it the report's headline
and first diagnosis of the run so far (run/live_diagnosis.py, every EVERY_S while the page asks);
once the test has ended and its report is written, the report's first screen: its outcome, its
headline and its first diagnosis.

The charts are SVG drawn by the page's script from those points (no library): the inferences per
second and the exact p50/p99 of each endpoint per window, Triton's queue and compute per request
and its average batch per model (its statistics intervals), failures per window by class, and
the load generator's CPU. They sit in a section placed after the exact table, outside the nodes
React draws, and only while that tab is shown; only then does the page ask for points.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flask import Flask, Response, jsonify, request

from loadtests.run.live_series import MAX_POINTS, LiveSeries
from loadtests.run.webui import EXACT_HEADER

ROUTE = "/triton-live/series"
CHARTS = (  # (key, title): the page's script draws each by its key
    ("throughput", "Inferences/s per endpoint"),
    ("latency", "Latency ms per window (exact): p50 solid, p99 dashed"),
    ("server_times", "Triton per request ms: queue solid, compute dashed"),
    ("batch", "Triton average batch"),
    ("failures", "Failures per window by class"),
    ("cpu", "Load generator CPU % of a core (all processes)"),
)


def install(app: Flask, series: LiveSeries, health: Callable[[], list[str]], auth=lambda view: view) -> None:
    """Add the route, and the section's style and script to the web UI's page."""

    @app.route(ROUTE)
    @auth
    def _series() -> Response:
        after = request.args.get("after", default=0, type=int)
        return jsonify({**series.since(after), "health": health()})

    @app.after_request
    def _add_charts(response: Response) -> Response:
        is_page = (request.endpoint or "").endswith("index") and response.mimetype == "text/html"
        if is_page and not response.direct_passthrough:
            page = response.get_data(as_text=True).replace("</head>", f"{STYLE}</head>", 1)
            response.set_data(page.replace("</body>", f"{script()}</body>", 1))
        return response


STYLE = """<style>
#suite-live { margin: 16px 0; }
#suite-live [data-suite-health] { margin: 0 0 8px; white-space: pre-line; }
#suite-live [data-suite-health]::first-line { font-weight: 600; }
#suite-live [data-suite-health].bad { color: #d32f2f; }
#suite-live [data-suite-health].good { color: #2e7d32; }
#suite-live .suite-grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 12px; }
#suite-live figure { margin: 0; border: 1px solid rgba(127,127,127,.35); border-radius: 4px; padding: 6px; }
#suite-live figcaption { font-size: .8rem; margin-bottom: 2px; }
#suite-live svg { width: 100%; height: auto; display: block; font: 10px sans-serif; fill: currentColor; }
#suite-live .suite-legend { font-size: .75rem; overflow-wrap: anywhere; }
#suite-live .suite-legend span { margin-right: 10px; white-space: nowrap; }
</style>"""

_SCRIPT = r"""<script>
(function () {
  const ROUTE = __ROUTE__, CHARTS = __CHARTS__, EXACT = __EXACT_HEADER__;
  const COLORS = ['#1976d2', '#e65100', '#2e7d32', '#6a1b9a', '#c62828', '#00838f', '#5d4037', '#ad1457'];
  const W = 420, H = 170, L = 44, R = 8, T = 8, B = 20;
  const section = document.createElement('section');
  section.id = 'suite-live';
  section.setAttribute('data-suite-charts', '');
  section.innerHTML = '<p data-suite-health></p><div class="suite-grid">' + CHARTS.map(([key, title]) =>
    `<figure data-suite-chart="${key}"><figcaption>${title}</figcaption><svg viewBox="0 0 ${W} ${H}"></svg>` +
    '<div class="suite-legend"></div></figure>').join('') + '</div>';
  let run = null, after = 0, points = [], server = [], asking = false, final = false;
  function exactTable() {
    return [...document.querySelectorAll('table')].find(
      t => [...t.querySelectorAll('thead th')].some(th => th.textContent.trim() === EXACT));
  }
  function place() {  // after the exact table (outside React's nodes), only while it is shown
    const table = exactTable();
    if (!table) { if (section.isConnected) { section.remove(); } return false; }
    const box = table.closest('.MuiTableContainer-root') || table;
    if (box.nextSibling !== section) { box.after(section); draw(); }
    return true;
  }
  const ms = us => us === null || us === undefined ? null : us / 1000;
  function lines() {  // {chart key: [{name, dash, points: [[t, value], ...]}]}
    const out = {throughput: [], latency: [], server_times: [], batch: [], failures: [], cpu: []};
    const names = [...new Set(points.flatMap(p => Object.keys(p.endpoints)))];
    for (const name of names) {
      const at = key => points.filter(p => p.endpoints[name]).map(p => [p.t, p.endpoints[name][key]]);
      out.throughput.push({name, points: at('infer_per_s')});
      const latency = key => at(key).map(([t, v]) => [t, ms(v)]);
      out.latency.push({name: name + ' p50', color: name, points: latency('p50_us')});
      out.latency.push({name: name + ' p99', color: name, dash: true, points: latency('p99_us')});
    }
    const models = [...new Set(server.flatMap(p => Object.keys(p.models)))];
    for (const model of models) {
      const at = key => server.filter(p => p.models[model]).map(p => [p.t, p.models[model][key]]);
      out.server_times.push({name: model + ' queue', color: model, points: at('queue_ms')});
      out.server_times.push({name: model + ' compute', color: model, dash: true, points: at('compute_ms')});
      out.batch.push({name: model, points: at('avg_batch')});
    }
    const classes = [...new Set(points.flatMap(p => Object.values(p.endpoints).flatMap(e => Object.keys(e.failures))))];
    for (const name of classes) {
      out.failures.push({name, points: points.map(p => [p.t, Object.values(p.endpoints).reduce(
        (sum, e) => sum + (e.failures[name] || 0), 0)])});
    }
    out.cpu.push({name: 'load generator', points: points.filter(p => p.cpu_pct !== null).map(p => [p.t, p.cpu_pct])});
    return out;
  }
  function draw() {
    const all = lines(), colorOf = {};
    for (const [key] of CHARTS) {
      const figure = section.querySelector(`[data-suite-chart="${key}"]`);
      const drawn = all[key].filter(line => line.points.some(([, v]) => v !== null));
      const values = drawn.flatMap(line => line.points.map(([, v]) => v).filter(v => v !== null));
      const times = points.map(p => p.t).concat(server.map(p => p.t));
      const t0 = Math.min(...times, 0), t1 = Math.max(...times, t0 + 1), top = niceTop(Math.max(...values, 0));
      const x = t => L + (t - t0) / (t1 - t0) * (W - L - R), y = v => H - B - v / top * (H - T - B);
      const axis = 'stroke="currentColor" stroke-opacity=".4"';
      let svg = `<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" ${axis}/>` +
        `<line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" ${axis}/>` +
        `<text x="${L - 4}" y="${T + 8}" text-anchor="end">${fmt(top)}</text>` +
        `<text x="${L - 4}" y="${H - B}" text-anchor="end">0</text>` +
        `<text x="${L}" y="${H - 6}">${fmt(t0)} s</text>` +
        `<text x="${W - R}" y="${H - 6}" text-anchor="end">${fmt(t1)} s</text>`;
      const legend = [];
      for (const line of drawn) {
        const group = line.color || line.name;
        const color = colorOf[group] = colorOf[group] || COLORS[Object.keys(colorOf).length % COLORS.length];
        // A window without a value (no success: no latency) breaks the line instead of drawing 0.
        const runs = [[]];
        for (const [t, v] of line.points) {
          if (v === null) { runs.push([]); continue; }
          runs[runs.length - 1].push(`${x(t).toFixed(1)},${y(v).toFixed(1)}`);
        }
        const dash = line.dash ? ' stroke-dasharray="4 3"' : '';
        for (const run of runs.filter(r => r.length)) {
          svg += `<polyline fill="none" stroke="${color}" stroke-width="1.5"${dash} data-suite-line="${line.name}"` +
            ` data-suite-points="${run.length}" points="${run.join(' ')}"/>`;
        }
        legend.push(`<span style="color:${color}">${line.dash ? '- -' : '&mdash;'} ${line.name}</span>`);
      }
      if (!drawn.length) {
        const empty = key === 'failures' ? 'no failures' : 'no data yet';
        svg += `<text x="${(L + W) / 2}" y="${H / 2}" text-anchor="middle" opacity=".6">${empty}</text>`;
      }
      figure.querySelector('svg').innerHTML = svg;
      figure.querySelector('.suite-legend').innerHTML = legend.join('');
    }
  }
  function niceTop(v) {
    if (!(v > 0)) { return 1; }
    const step = Math.pow(10, Math.floor(Math.log10(v)));
    return [1, 2, 2.5, 5, 10].map(m => m * step).find(m => m >= v);
  }
  const fmt = v => Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : +v.toFixed(2) + '';
  async function ask() {
    if (asking || !place()) { return; }
    asking = true;
    try {
      const answer = await (await fetch(`${ROUTE}?after=${after}`)).json();
      if (answer.run !== run || answer.next < after) { run = answer.run; after = 0; points = []; server = []; }
      points = points.concat(answer.points).slice(-__MAX_POINTS__);
      server = server.concat(answer.server).slice(-__MAX_POINTS__);
      after = answer.next;
      final = answer.final;
      const health = section.querySelector('[data-suite-health]');
      health.textContent = answer.health.join('\n');
      const first = (answer.health[0] || '').replace(/^So far: /, '');
      health.className = /^(Unhealthy|Failed|No request)/.test(first) ? 'bad' : /^Healthy/.test(first) ? 'good' : '';
      section.setAttribute('data-suite-final', final ? 'true' : 'false');
      draw();
    } catch (error) {
      // The web UI went away (Locust stopped): the next poll tries again.
    } finally {
      asking = false;
    }
  }
  new MutationObserver(place).observe(document.documentElement, {childList: true, subtree: true});
  setInterval(ask, 2000);
})();
</script>"""


def script() -> str:
    """The page's script, its constants filled in."""
    names = {"__ROUTE__": ROUTE, "__CHARTS__": [list(chart) for chart in CHARTS], "__EXACT_HEADER__": EXACT_HEADER}
    text = _SCRIPT.replace("__MAX_POINTS__", str(MAX_POINTS))
    for name, value in names.items():
        text = text.replace(name, json.dumps(value).replace("</", "<\\/"))
    return text
