"""One training written by two writers into one folder is reported once.

detectron2 writes every scalar to `metrics.json` and to TensorBoard event files in the
same output folder; other trainers pair a CSV with event files the same way. Read
separately they are two runs with the same curves, and every event would be reported
twice. Two runs are mirrors when their sources share a folder and their main loss has
the same name, the same first and last logged step, the same number of points and the
same first and last value (to float32 precision: TensorBoard stores float32). The run
with more points (ties: the first found) is kept; the mirror is dropped with a warning
that names both.
"""
from __future__ import annotations

import math
import os

from .. import diagnostics
from ..storage import common_folder
from ..model.report import Report, RunReport

RTOL = 1e-6
"""float32 keeps about 7 significant digits."""


def drop_mirrors(report: Report) -> None:
    """Remove runs that repeat another run's curves from the same folder."""
    if len(report.runs) < 2:
        return
    kept: list[RunReport] = []
    by_key: dict[tuple, list[RunReport]] = {}
    for r in sorted(report.runs, key=lambda r: -r.points):
        key = _key(r)
        twin = next((k for k in by_key.get(key, []) if _same_values(k, r)), None) if key else None
        if twin is not None:
            diagnostics.warn(f"{key[0]}: {_what(r)} hold(s) the same curves as {_what(twin)} "
                             f"(one training, two writers): reported once, from the {', '.join(twin.formats)} files")
            continue
        if key:
            by_key.setdefault(key, []).append(r)
        kept.append(r)
    drop = {id(r) for r in report.runs} - {id(r) for r in kept}
    report.runs[:] = [r for r in report.runs if id(r) not in drop]


def _key(r: RunReport) -> tuple | None:
    s = r.stats or {}
    if not r.sources or s.get("main_metric") is None or s.get("points", 0) < 2:
        return None
    folder = common_folder(r.sources)  # sources may be URLs, or runs inside a database
    return folder, s["main_metric"], s.get("first_step"), s.get("last_step"), s.get("points")


def _what(r: RunReport) -> str:
    names = sorted({os.path.basename(p) for p in r.sources})
    return names[0] if len(names) == 1 else f"{len(names)} {', '.join(r.formats)} files"


def _same_values(a: RunReport, b: RunReport) -> bool:
    return all(_close(a.stats.get(k), b.stats.get(k)) for k in ("first_value", "last_value"))


def _close(x, y) -> bool:
    if x is None or y is None:
        return False
    if math.isnan(x) and math.isnan(y):
        return True
    return math.isclose(x, y, rel_tol=RTOL, abs_tol=1e-12)
