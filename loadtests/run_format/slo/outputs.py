"""An SLO verdict's outputs: the console table and the JUnit XML file for CI.

Both the end-of-run gate and `python -m analysis check` print and write these.

    print(format_table(results)); write_junit("slo.xml", results)
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from loadtests.run_format.slo.verdicts import EXIT_SLO_FAILED, Result, failed

JUNIT_CLASSNAME = "triton-loadtest.slo"


def format_table(results: list[Result]) -> str:
    """The console table: one line per clause, then a verdict line."""
    width = max([len("clause")] + [len(r.clause.text) for r in results])
    where = max([len("endpoint")] + [len(r.clause.endpoint) for r in results])
    verdict_width = 12 if any(r.inconclusive for r in results) else 6
    lines = [
        "SLO gates (--slo):",
        f"{'result':<{verdict_width}}  {'clause':<{width}}  {'endpoint':<{where}}  measured / limit",
    ]
    for result in results:
        verdict = result.verdict.upper()
        clause = result.clause
        cells = f"{verdict:<{verdict_width}}  {clause.text:<{width}}  {clause.endpoint:<{where}}"
        lines.append(f"{cells}  {result.message}")
    bad = failed(results)
    unsure = sum(result.inconclusive for result in bad)
    if unsure:
        lines.append(
            f"SLO: {len(bad) - unsure} of {len(results)} clauses failed, {unsure} inconclusive "
            f"(too little evidence to pass; exit code {EXIT_SLO_FAILED})"
        )
    elif bad:
        lines.append(f"SLO: {len(bad)} of {len(results)} clauses failed (exit code {EXIT_SLO_FAILED})")
    else:
        lines.append(f"SLO: all {len(results)} clauses passed")
    return "\n".join(lines)


def junit_xml(results: list[Result], suite: str = "slo") -> ET.ElementTree:
    """JUnit XML: one testcase per clause, a <failure> on each failed one."""
    testsuites = ET.Element("testsuites", name="triton-loadtest")
    testsuite = ET.SubElement(
        testsuites, "testsuite", name=suite, tests=str(len(results)), failures=str(len(failed(results))), errors="0"
    )
    for result in results:
        case = ET.SubElement(testsuite, "testcase", classname=JUNIT_CLASSNAME, name=result.clause.text)
        if result.passed:
            ET.SubElement(case, "system-out").text = result.message
        else:
            kind = "SLO inconclusive" if result.inconclusive else "SLO"
            failure = ET.SubElement(case, "failure", message=result.message, type=kind)
            failure.text = f"{result.clause.text} on {result.clause.endpoint}: {result.message}"
    ET.indent(testsuites)
    return ET.ElementTree(testsuites)


def write_junit(path: str | Path, results: list[Result], suite: str = "slo") -> Path:
    path = Path(path)
    if path.parent != Path():
        path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(results, suite).write(path, encoding="utf-8", xml_declaration=True)
    return path
