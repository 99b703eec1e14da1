"""The report's "What made the slow requests slow" (a --trace-sample run): per endpoint, the
sentence, the parts of the median request and of the tail bands (a table and a stacked bar per
band), and each traced request's latency against its time in Triton's queue.

    tail_section(doc, data, prefix)   # from analysis/report.py's build()
"""

from __future__ import annotations

from analysis.dataset import Dataset
from analysis.document import Document
from analysis.plots.tail import latency_vs_queue, tail_parts
from loadtests.run_format.attribution import PART_LABELS, PARTS

BANDS = (("median", "median (p40-p60)"), ("above_p95", "above p95"), ("above_p99", "above p99"))


def join_line(traces: dict) -> str:
    """How many of the run's requests Triton traced, and what became of each trace."""
    unjoined = traces.get("unjoined") or {}
    why = "; ".join(f"{count} {reason}" for reason, count in sorted(unjoined.items())) or "none"
    rate = traces.get("join_rate")
    joined = f"{100 * rate:.1f} %" if rate is not None else "n/a"
    line = (
        f"--trace-sample {traces.get('sample')} (Triton traced 1 request in {traces.get('triton_rate')}): "
        f"{traces.get('traces', 0)} traces of the run's {traces.get('client_requests', 0)} requests "
        f"(about {traces.get('expected_traces', 0)} expected), {traces.get('joined', 0)} joined "
        f"(join rate {joined}); unjoined: {why}."
    )
    if traces.get("other_clients"):
        line += f" {traces['other_clients']} traces of other clients left out."
    return line


def band_rows(block: dict) -> list[list[str]]:
    rows = []
    for key, label in BANDS:
        band = block["bands"].get(key)
        if band is None:
            continue
        if not band["requests"]:  # too few traced requests for the band (36 have none above p99)
            rows.append([label, "0", "no request", *("" for _ in PARTS)])
            continue
        shares = [f"{100 * band['share'][part]:.0f} %" for part in PARTS]
        rows.append([label, str(band["requests"]), f"{band['mean_us'] / 1000:.3f}", *shares])
    return rows


def tail_section(doc: Document, data: Dataset, prefix: str) -> None:
    traces = data.run.traces if data.run is not None else {}
    if not traces:
        return
    doc.heading("What made the slow requests slow")
    doc.paragraph(join_line(traces), True)
    for problem in traces.get("problems") or []:
        doc.paragraph(f"Note: {problem}", True)
    doc.paragraph(
        "Each traced request's client latency split by Triton's own timestamps: Triton receiving, queue, "
        "compute input, compute infer, compute output, Triton sending, and the rest (the network and the "
        "client). Bands by the traced requests' own percentiles; a share is the part's time over the band's.",
        True,
    )
    headers = ["band", "requests", "mean (ms)", *(PART_LABELS[part] for part in PARTS)]
    for name, block in sorted((traces.get("endpoints") or {}).items()):
        doc.heading(name, 3)
        cause = f" Cause: {PART_LABELS[block['cause']]}." if block.get("cause") else ""
        doc.paragraph(f"{block['sentence'][0].upper()}{block['sentence'][1:]}.{cause}")
        if not block.get("bands"):
            continue
        doc.table(headers, band_rows(block))
        slug = plots_slug(name)
        doc.image(f"{prefix}tail_{slug}.png", tail_parts(name, block), f"{name}: where the time went by band")
        if data.traces is not None:
            frame = data.traces[data.traces["endpoint"] == name]
            if len(frame):
                png = latency_vs_queue(frame, name, block.get("p99_us"))
                doc.image(f"{prefix}tail_queue_{slug}.png", png, f"{name}: latency against queue time")


def plots_slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_")
