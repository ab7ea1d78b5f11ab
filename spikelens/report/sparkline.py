"""A finding's neighbourhood as a few lines of text: enough to see the shape of a
spike, a turn or a blow-up in a terminal or a markdown code block without a plot.

Columns take the *largest* value of the points they cover, so a one-point spike
never disappears when a window holds more points than the chart has columns.
Non-finite values are drawn as `×`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

BLOCKS = " ▁▂▃▄▅▆▇█"
NONFINITE = "×"


@dataclass
class Window:
    """The points of one metric around a finding, on the stitched timeline."""

    metric: str
    step: np.ndarray
    value: np.ndarray
    anchor: int | None

    @property
    def has_finite(self) -> bool:
        """False when every point is NaN or inf (a chart would show nothing)."""
        return bool(np.isfinite(self.value).any())


def live_series(frame: pl.DataFrame | None, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Steps and values of a metric's live (not superseded) points, by step."""
    if frame is None or frame.height == 0:
        return np.empty(0, np.int64), np.empty(0)
    part = frame.filter((pl.col("metric") == metric) & pl.col("value").is_not_null())
    if "superseded" in part.columns:
        part = part.filter(~pl.col("superseded"))
    part = part.sort("step", "seq")
    return part.get_column("step").to_numpy(), part.get_column("value").to_numpy().astype(np.float64)


def window(step: np.ndarray, value: np.ndarray, start: int | None, end: int | None,
           anchor: int | None, metric: str, pad_points: int = 24) -> Window | None:
    """The points from a little before `start` to a little after `end` (at least
    `pad_points` on each side, and as much context as the finding is long)."""
    if step.size == 0:
        return None
    lo_step = start if start is not None else anchor
    hi_step = end if end is not None else anchor
    if lo_step is None:
        return None
    if hi_step is None or hi_step < lo_step:
        hi_step = lo_step
    i0 = int(np.searchsorted(step, lo_step, side="left"))
    i1 = int(np.searchsorted(step, hi_step, side="right"))
    pad = max(pad_points, (i1 - i0) // 2)
    a, b = max(0, i0 - pad), min(step.size, max(i1, i0 + 1) + pad)
    if b <= a:
        return None
    return Window(metric=metric, step=step[a:b], value=value[a:b], anchor=anchor)


def _columns(value: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the largest finite value and whether any point was non-finite."""
    n = value.size
    finite = np.isfinite(value)
    if n <= width:
        return np.where(finite, value, np.nan), ~finite
    edges = (np.arange(width) * n) // width
    clean = np.where(finite, value, -np.inf)
    top = np.maximum.reduceat(clean, edges)
    bad = np.add.reduceat((~finite).astype(np.int64), edges) > 0
    return np.where(np.isfinite(top), top, np.nan), bad


def _levels(col: np.ndarray, levels: int) -> tuple[np.ndarray, float, float, bool]:
    """Integer level 1..levels per column (0 where empty), and the value range drawn."""
    ok = np.isfinite(col)
    if not ok.any():
        return np.zeros(col.size, np.int64), float("nan"), float("nan"), False
    lo, hi = float(col[ok].min()), float(col[ok].max())
    use_log = lo > 0 and hi / lo > 10
    t = np.log(np.where(ok, col, lo)) if use_log else np.where(ok, col, lo)
    tlo, thi = (np.log(lo), np.log(hi)) if use_log else (lo, hi)
    span = thi - tlo
    frac = (t - tlo) / span if span > 0 else np.zeros(col.size)
    lvl = 1 + np.round(frac * (levels - 1)).astype(np.int64)
    return np.where(ok, lvl, 0), lo, hi, use_log


def sparkline(value: np.ndarray, width: int = 48) -> str:
    """One line of block characters (▁..█); `×` where a value was NaN or inf."""
    col, bad = _columns(np.asarray(value, dtype=np.float64), width)
    lvl, *_ = _levels(col, 8)
    chars = np.array(list(BLOCKS))[lvl]
    chars[bad] = NONFINITE
    return "".join(chars.tolist())


def chart(win: Window, width: int = 48, height: int = 3) -> list[str]:
    """A `height`-row block chart with the value range on the left and the steps
    below, `▲` under the finding's anchor step."""
    col, bad = _columns(win.value, width)
    lvl, lo, hi, use_log = _levels(col, 8 * height)
    w = col.size
    rows = []
    for r in range(height - 1, -1, -1):
        part = np.clip(lvl - 8 * r, 0, 8)
        chars = np.array(list(BLOCKS))[part]
        if r == height - 1:
            chars[bad] = NONFINITE
        rows.append("".join(chars.tolist()))
    hi_label, lo_label = _num(hi), _num(lo)
    label_w = max(len(hi_label), len(lo_label))
    out = []
    for i, row in enumerate(rows):
        label = hi_label if i == 0 else (lo_label if i == height - 1 else "")
        out.append(f"{label:>{label_w}} ┤{row}".rstrip())
    out.append(" " * label_w + "  " + _axis(win, w))
    scale = " (log scale)" if use_log else ""
    out.append(" " * label_w + f"  {win.metric}, steps {int(win.step[0])}–{int(win.step[-1])}{scale}")
    return out


def _axis(win: Window, width: int) -> str:
    """`▲step` under the column that holds the anchor step."""
    if win.anchor is None or win.step.size == 0:
        return ""
    n = win.step.size
    i = int(np.clip(np.searchsorted(win.step, win.anchor, side="left"), 0, n - 1))
    c = i if n <= width else (i * width) // n
    label = f"▲{win.anchor}"
    c = min(c, max(width + 2 - len(label), 0))
    return " " * c + label


def _num(x: float) -> str:
    if not np.isfinite(x):
        return ""
    return f"{x:.4g}"


def neighbourhood(run, finding, cache: dict | None = None) -> Window | None:
    """The window to draw for a finding of a `RunReport`: its own metric, or the run's
    main loss for run-level findings (resumes, gaps)."""
    metric = finding.metric or run.stats.get("main_metric") or next(
        (m for m, r in run.metrics.items() if r == "loss"), None)
    if metric is None or run.frame is None:
        return None
    cache = {} if cache is None else cache
    if metric not in cache:
        cache[metric] = live_series(run.frame, metric)
    step, value = cache[metric]
    start = finding.start_step
    if start is None:
        start = finding.extra.get("resume_step")
    end = finding.end_step
    if finding.kind == "nan" and end is None and start is not None:
        end = start
    if finding.kind == "divergence" and end is None and step.size:
        end = int(step[-1])
    return window(step, value, start, end, finding.anchor_step, metric)
