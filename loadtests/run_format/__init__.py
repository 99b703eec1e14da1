"""The run-directory format: what the load test writes and what analysis/ reads, defined once.

The base of the suite (it imports nothing of it but itself, and neither Locust nor gevent):
loadtests/recording/ writes a run directory with it and analysis/ reads one with it, so the
measuring side never depends on the reporting side.

    files.py         the file names (config.json, summary.json, timeseries.csv, hdr/, ...)
    summary.py       summary.json's keys, the late ratio, the overall/per-model merge of entries
    hdr.py           the histogram range, the percentile summary, reading hdr/*.hlog
    confidence.py    percentile confidence intervals (summary.json's latency_ci_us)
    components.py    the Components of Latency split (reports and sweep.csv)
    faults.py        summary.json's "faults" as sentences (console warnings and the report)
    outcome.py       what happened to the requests in one sentence (the report's first line,
                     the web UI's health line)
    slo/             --slo clauses: grammar, verdicts on summary.json entries, table and JUnit XML
    output_paths.py  can an output be written (asked before the work that produces it)
    ensembles.py     which recorded models are steps of which ensemble (from the configs in config.json)
    attribution.py   what made the slow requests slow: a traced request's time, part by part
    storage.py       run directories at URLs (fsspec): --upload, and analysis reading one down

    from loadtests.run_format.files import SUMMARY_JSON
    from loadtests.run_format.hdr import summarise_us
"""
