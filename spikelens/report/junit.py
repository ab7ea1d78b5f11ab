"""`spikelens check --junit FILE`: JUnit XML that CI test reporters understand.

One `<testcase>` per run (classname `spikelens.check`, name = the run, `file` = its first
source). A run that fails the gate gets one `<failure>`: the attribute `message` sums it
up, the body lists every failing finding with its message; findings that did not fail
go to `<system-out>`. One failure element per test case keeps strict JUnit schemas happy.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from ..check import CheckResult, Gate

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
    runs = result.report.runs
    failing = {r.run: [g for g in result.run_gates(r) if g.fails] for r in runs}
    n_fail = sum(1 for r in runs if failing[r.run])
    stamp = (timestamp or datetime.now(timezone.utc)).replace(microsecond=0).isoformat()
    common = {"tests": str(len(runs)), "failures": str(n_fail), "errors": "0", "time": f"{elapsed:.3f}"}
    root = ET.Element("testsuites", {"name": "spikelens check", **common})
    suite = ET.SubElement(root, "testsuite", {"name": "spikelens check", **common, "skipped": "0",
                                              "timestamp": stamp})
    props = ET.SubElement(suite, "properties")
    for key, value in result.policy.to_json().items():
        if key != "origins":
            ET.SubElement(props, "property", name=key, value=_x(value if isinstance(value, str) else json.dumps(value)))
    per_run_time = f"{elapsed / len(runs):.3f}" if runs else "0.000"
    for run in runs:
        attrs = {"classname": "spikelens.check", "name": _x(run.run), "time": per_run_time}
        if run.sources:
            attrs["file"] = _x(run.sources[0])
        case = ET.SubElement(suite, "testcase", attrs)
        bad = failing[run.run]
        if bad:
            first = bad[0].finding
            summary = f"{len(bad)} finding{'s fail' if len(bad) != 1 else ' fails'} the check: {first.message}"
            if len(bad) > 1:
                summary += f" (and {len(bad) - 1} more)"
            kinds = sorted({g.finding.code for g in bad})
            failure = ET.SubElement(case, "failure", message=_x(summary), type=_x(" ".join(kinds)))
            failure.text = _x("\n".join(finding_line(g) for g in bad))
        rest = [g for g in result.run_gates(run) if not g.fails]
        if rest:
            ET.SubElement(case, "system-out").text = _x("\n".join(finding_line(g) for g in rest))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
