"""The report's charts read without colour alone, with no legend or label over the data, and
over-time charts on one time axis. Real runs against the local Triton (tests/analysis/test_report.py)."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg

from analysis import plots


def drawn(figure):
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()
    # Whether two labels of a real run overlap depends on where its points fell (a label moved
    # above a low point once met its neighbour's): not asserted on the run's own numbers.


def test_a_label_near_the_x_axis_goes_above_its_point():
    """Labels alternate above and below their points; a low point's label below it fell out of
    the axes (step 2 of a real run whose p99 came out low on a busy machine)."""
    import pandas as pd

    p99_ms = [100.0, 4.0, 120.0, 110.0]
    frame = pd.DataFrame(
        {
            "infer_per_s": [10.0, 20.0, 30.0, 40.0],
            **{column: [ms * 1000 * share for ms in p99_ms] for column, share in zip(
                ("p50_us", "p90_us", "p95_us", "p99_us"), (0.5, 0.8, 0.9, 1.0), strict=True)},
            "label": [f"step {index}: {index + 1} users" for index in range(4)],
            "level": [1.0, 2.0, 3.0, 4.0],
        }
    )  # fmt: skip
    figure = plots.latency_vs_throughput_figure([("run", frame)], "step")
    renderer = drawn(figure)
    (axes,) = figure.axes
    inside = axes.get_window_extent(renderer)
    for text in axes.texts:
        box = text.get_window_extent(renderer)
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1, text.get_text()
