"""`spikelens check --junit FILE`: JUnit XML that CI test reporters understand.

One `<testcase>` per run (classname `spikelens.check`, name = the run, `file` = its first
source). A run that fails the gate gets one `<failure>`: the attribute `message` sums it
up, the body lists every failing finding with its message; findings that did not fail
go to `<system-out>`. One failure element per test case keeps strict JUnit schemas happy.
"""
from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from typing import TextIO

from ..check import CheckResult, Gate
from ..model.report import RunReport

_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""Characters XML 1.0 cannot hold, even escaped."""


def _x(text: object) -> str:
    return _NOT_XML.sub("\ufffd", str(text))


def finding_line(gate: Gate) -> str:
    f = gate.finding
    where = f" {f.metric}" if f.metric else ""
    step = "" if f.anchor_step is None else f" step {f.anchor_step}"
    return f"{f.code} {f.kind}{where}{step} ({f.severity}, {gate.status}): {f.message} [{gate.reason}]"


def render_junit(result: CheckResult, *, elapsed: float = 0.0, timestamp: datetime | None = None) -> str:
    """The whole JUnit document (XML declaration included, ends with a newline)."""
    buf = io.StringIO()
    write_junit(result, buf, elapsed=elapsed, timestamp=timestamp)
    return buf.getvalue()


CASES = "spikelens-cases"
"""The element standing for the test cases in the document's frame (never written)."""


def write_junit(result: CheckResult, out: TextIO, *, elapsed: float = 0.0, timestamp: datetime | None = None) -> None:
    """`render_junit`, written a test case at a time: the frame (suites, properties) is one
    small tree with a stand-in where the cases go, each case its own tree indented as it
    would be in the whole document; a spooled sweep's runs are read back one at a time."""
    runs = result.report.runs
    stamp = (timestamp or datetime.now(timezone.utc)).replace(microsecond=0).isoformat()
    common = {"tests": str(len(runs)), "failures": str(result.runs_failing), "errors": "0", "time": f"{elapsed:.3f}"}
    root = ET.Element("testsuites", {"name": "spikelens check", **common})
    suite = ET.SubElement(root, "testsuite", {"name": "spikelens check", **common, "skipped": "0",
                                              "timestamp": stamp})
    props = ET.SubElement(suite, "properties")
    for key, value in result.policy.to_json().items():
        if key != "origins":
            ET.SubElement(props, "property", name=key, value=_x(value if isinstance(value, str) else json.dumps(value)))
    if runs:
        ET.SubElement(suite, CASES)
    ET.indent(root)
    head, _, tail = ET.tostring(root, encoding="unicode", xml_declaration=True).partition(f"<{CASES} />")
    out.write(head)
    per_run_time = f"{elapsed / len(runs):.3f}" if runs else "0.000"
    for i, run in enumerate(runs):
        case = _case(result, run, per_run_time)
        ET.indent(case, level=2)
        out.write(("\n    " if i else "") + ET.tostring(case, encoding="unicode"))
    out.write(tail + "\n")


def _case(result: CheckResult, run: RunReport, per_run_time: str) -> ET.Element:
    attrs = {"classname": "spikelens.check", "name": _x(run.run), "time": per_run_time}
    if run.sources:
        attrs["file"] = _x(run.sources[0])
    case = ET.Element("testcase", attrs)
    gates = result.run_gates(run)
    bad = [g for g in gates if g.fails]
    if bad:
        first = bad[0].finding
        summary = f"{len(bad)} finding{'s fail' if len(bad) != 1 else ' fails'} the check: {first.message}"
        if len(bad) > 1:
            summary += f" (and {len(bad) - 1} more)"
        kinds = sorted({g.finding.code for g in bad})
        failure = ET.SubElement(case, "failure", message=_x(summary), type=_x(" ".join(kinds)))
        failure.text = _x("\n".join(finding_line(g) for g in bad))
    rest = [g for g in gates if not g.fails]
    if rest:
        ET.SubElement(case, "system-out").text = _x("\n".join(finding_line(g) for g in rest))
    return case
