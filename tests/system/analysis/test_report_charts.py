"""The report's charts read without colour alone, with no legend or label over the data, and over-time
charts on one time axis.

The tests here need a real Triton or a browser; the others, and this feature's account, are in
tests/unit/analysis/test_report_charts.py.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

from analysis import plots
from analysis.compare import write_comparison
from analysis.dataset import load
from tests.system.analysis.test_report import over_time_figures, stepped_run, two_class_run  # noqa: F401  (fixtures: real runs)
from tests.unit.analysis.test_report_charts import drawn


def overlaps(a, b) -> bool:
    return a.x0 < b.x1 - 1 and b.x0 < a.x1 - 1 and a.y0 < b.y1 - 1 and b.y0 < a.y1 - 1


def legends_clear_of_the_axes(figure) -> list[str]:
    """Legends drawn over any axes of the figure (its ticks and labels included)."""
    renderer = drawn(figure)
    out = []
    legends = [axes.get_legend() for axes in figure.axes if axes.get_legend()] + list(figure.legends)
    boxes = [legend.get_window_extent(renderer) for legend in legends]
    for legend in legends:  # the axes' own extent (ticks, labels, data), not their legends'
        legend.set_visible(False)
    extents = [axes.get_tightbbox(renderer) for axes in figure.axes]
    for legend, box in zip(legends, boxes, strict=True):
        for axes, extent in zip(figure.axes, extents, strict=True):
            if overlaps(box, extent):
                out.append(f"{[t.get_text() for t in legend.texts]} over {axes.get_ylabel()!r}")
    return out


def two_model_intervals(data) -> list[dict]:
    """The real run's statistics intervals, with a second model's entry (the same numbers, a
    little larger) as a run of two models reports them."""
    out = []
    for interval in copy.deepcopy(data.server_intervals):
        for model, entry in list(interval["models"].items()):
            interval["models"]["resnet50"] = {**entry, "queue_us": entry.get("queue_us", 0) * 1.5}
            del model
        out.append(interval)
    return out


def test_models_of_the_server_chart_differ_by_more_than_colour(stepped_run):  # noqa: F811
    data = load(stepped_run)
    figure = plots.server_over_time_figure(two_model_intervals(data), None)
    for axes in figure.axes:
        lines = {line.get_label(): line for line in axes.get_lines() if not line.get_label().startswith("_")}
        styles = {}
        for label, line in lines.items():
            model = "resnet50" if label.startswith("resnet50") else "identity"
            styles.setdefault(model, set()).add(line.get_marker())
        assert styles["identity"].isdisjoint(styles["resnet50"]), styles


def test_no_legend_covers_data_or_an_axis(two_class_run, tmp_path):  # noqa: F811
    run_dir = Path(shutil.copytree(two_class_run, tmp_path / "run"))
    data = load(run_dir)
    axis = plots.TimeAxis.of_run(data.timeseries, data.steps, data.steps_kind, data.window_s)
    figures = {
        "throughput": plots.throughput_over_time_figure(data.timeseries, axis, data.window_s),
        "latency": plots.latency_over_time_figure(data.timeseries, axis, data.window_s),
        "server": plots.server_over_time_figure(data.server_intervals, axis),
    }
    figures["batch sizes"] = plots.batch_sizes_figure(data.run.server, data.run.requested_batch_sizes())
    for name, figure in figures.items():
        assert legends_clear_of_the_axes(figure) == [], name


def test_level_labels_stay_inside_their_axes_and_off_the_title(two_class_run):  # noqa: F811
    data = load(two_class_run)
    figure = plots.latency_vs_throughput_figure(list(data.levels.items()), data.level_kind)
    renderer = drawn(figure)
    title = figure._suptitle.get_window_extent(renderer)
    for axes in figure.axes:
        inside = axes.get_window_extent(renderer)
        labels = [text for text in axes.texts if text.get_text()]
        assert labels
        for text in labels:
            box = text.get_window_extent(renderer)
            assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1, (
                text.get_text()
            )
            assert not overlaps(box, title)


def test_over_time_charts_line_up(stepped_run):  # noqa: F811
    data = load(stepped_run)
    figures = over_time_figures(data)
    assert len(figures) == 4  # the real run sampled Triton's CPU: the resources chart is there
    spans = set()
    for figure in figures:
        drawn(figure)
        width = figure.get_figwidth() * figure.dpi
        for axes in figure.axes:
            box = axes.get_position()
            spans.add((round(box.x0 * width), round(box.x1 * width)))
    assert len(spans) == 1, spans  # every time axis starts and ends at the same pixel


def test_comparison_over_time_names_run_and_endpoint_and_marks_the_steps(stepped_run, tmp_path):  # noqa: F811
    again = Path(shutil.copytree(stepped_run, tmp_path / "again"))
    write_comparison([stepped_run, again], ["identity", "identity_b"], tmp_path / "cmp")
    data = load(stepped_run)
    (name,) = data.levels
    series = [("identity", name, data.timeseries, data.steps), ("identity_b", name, data.timeseries, data.steps)]
    figure = plots.compare_over_time_figure(series, "p99 and throughput over time", data.window_s)
    step_starts = sorted(float(step["start_s"]) for step in data.steps)
    styles = set()
    for axes in figure.axes:
        labels = [line.get_label() for line in axes.get_lines() if not line.get_label().startswith("_")]
        assert labels == [f"identity: {name}", f"identity_b: {name}"]
        styles |= {line.get_linestyle() for line in axes.get_lines() if not line.get_label().startswith("_")}
        marks = sorted(line.get_xdata()[0] for line in axes.get_lines() if line.get_label() == "_step")
        assert marks == step_starts
    assert len(styles) == 2  # the runs differ by line style, not by colour alone
