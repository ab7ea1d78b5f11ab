"""One PNG per run: the loss on a log scale with the findings shaded, and the evidence
metrics (gradient norm, learning rate, loss scale) in stacked panels below, so the
precursor of a spike is visible right above or below it.

Draws with matplotlib's Agg canvas directly (no pyplot, no global backend switch),
from the stitched frame: points a later launch superseded are drawn faint, NaN and
inf as red ticks along the bottom of the panel. Long series are drawn as a faint
min/max band (which keeps every spike visible) under the mean of each bin.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from ..model.finding import Finding
from ..model.report import Report, RunReport
from .verdict import verdict

PANEL_ROLES = (("loss", ("loss", "eval_loss")), ("grad norm", ("grad_norm",)), ("learning rate", ("lr",)),
               ("loss scale", ("loss_scale",)))
"""Panels top to bottom: title and the metric roles drawn in it."""
SHADE = {"error": "#d62728", "warning": "#ff7f0e", "info": "#7f7f7f"}
SPAN_KINDS = {"spike", "divergence", "nan", "oscillation", "excursion", "level_shift", "repeated_data", "plateau"}
MARK_KINDS = {"resume_overlap", "step_reset", "step_gap", "wallclock_gap"}
PANEL_KINDS = {"loss_scale_collapse", "grad_norm_outlier", "lr_discontinuity"}
"""Kinds about an evidence metric: shaded in that metric's panel only."""
MAX_FINDING_PNGS = 20
"""Zoomed finding pictures per run at most (a run with 300 spikes gets its worst 20)."""
MAX_POINTS = 3000
"""Above this many points a series is drawn as MAX_POINTS/2 bins (min/max band and mean)."""


@dataclass
class Span:
    """A shaded stretch (or, with x1 == x0, a line) for one finding."""

    x0: float
    x1: float
    color: str
    label: str
    line: bool = False
    metric: str | None = None
    """Set for PANEL_KINDS: the only metric whose panel shows the span."""


def finding_spans(run: RunReport, last_step: float | None = None) -> list[Span]:
    """What to shade: each spike/divergence/NaN/oscillation needing attention as a
    stretch, each resume event as a dashed line."""
    out: list[Span] = []
    for f in run.findings:
        color = SHADE.get(f.severity, SHADE["info"])
        if f.kind in MARK_KINDS:
            at = f.extra.get("resume_step", f.start_step if f.start_step is not None else f.anchor_step)
            if at is not None:
                out.append(Span(float(at), float(at), color, f.kind, line=True))
            continue
        panel_only = f.kind in PANEL_KINDS
        if (f.kind not in SPAN_KINDS and not panel_only) or (f.severity == "info" and f.kind != "repeated_data"):
            continue
        x0 = f.start_step if f.start_step is not None else f.anchor_step
        if x0 is None:
            continue
        x1 = f.end_step
        if x1 is None:
            open_ended = f.kind in ("nan", "divergence") or f.recovery == "none"
            x1 = last_step if open_ended and last_step is not None else (f.peak_step or x0)
        out.append(Span(float(x0), float(max(x1, x0)), color, f.kind, metric=f.metric if panel_only else None))
    seen: set[tuple] = set()
    unique = []
    for sp in out:  # the same event in several metrics (NaN in loss and grad norm) is drawn once
        key = (sp.label, sp.x0, sp.x1, sp.line, sp.metric)
        if key not in seen:
            seen.add(key)
            unique.append(sp)
    return unique


def envelope(step: np.ndarray, value: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_points` points that keep the min and max of each bin of the series."""
    n = step.size
    if n <= max_points:
        return step, value
    bins = max_points // 2
    edges = (np.arange(bins) * n) // bins
    lo = np.minimum.reduceat(value, edges)
    hi = np.maximum.reduceat(value, edges)
    xs = np.repeat(step[edges], 2)
    ys = np.empty(2 * bins)
    ys[0::2], ys[1::2] = lo, hi
    return xs, ys


def bin_means(step: np.ndarray, value: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The mean of each of `max_points // 2` bins, at the bin's middle step."""
    bins = max_points // 2
    edges = (np.arange(bins) * step.size) // bins
    counts = np.diff(np.append(edges, step.size))
    mean = np.add.reduceat(value, edges) / counts
    mid = step[edges + counts // 2]
    return mid, mean


def _series(frame: pl.DataFrame, metric: str) -> dict[str, np.ndarray]:
    part = frame.filter((pl.col("metric") == metric) & pl.col("value").is_not_null()).sort("step", "seq")
    sup = part.get_column("superseded").to_numpy() if "superseded" in part.columns else np.zeros(part.height, bool)
    return {"step": part.get_column("step").to_numpy(), "value": part.get_column("value").to_numpy().astype(np.float64),
            "superseded": sup.astype(bool)}


def _panels(run: RunReport) -> list[tuple[str, list[str]]]:
    present = set(run.frame.get_column("metric").unique().to_list()) if run.frame is not None else set()
    out = []
    for title, roles in PANEL_ROLES:
        metrics = sorted((m for m, r in run.metrics.items() if r in roles and m in present),
                         key=lambda m: (roles.index(run.metrics[m]), m))
        if metrics:
            out.append((title, metrics[:6]))
    return out


def plot_run(run: RunReport, *, dpi: int = 100) -> bytes:
    """The PNG bytes of one run's picture."""
    fig = figure(run, dpi=dpi)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def figure(run: RunReport, *, dpi: int = 100):
    """The matplotlib Figure of one run (on an Agg canvas; nothing global is touched)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = _panels(run)
    if not panels:
        return _empty_figure(run, dpi)
    frame = run.frame
    last = float(frame.get_column("step").max()) if frame.height else None
    spans = finding_spans(run, last)
    steps = frame.get_column("step")
    x_range = (float(steps.min()), float(steps.max())) if frame.height else (0.0, 1.0)
    heights = [3.0] + [1.2] * (len(panels) - 1)
    fig = Figure(figsize=(12, 1.2 + sum(heights) * 1.05), dpi=dpi)
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, sharex=True, gridspec_kw={"height_ratios": heights})
    axes = np.atleast_1d(axes)
    for i, (ax, (title, metrics)) in enumerate(zip(axes, panels)):
        _draw_panel(ax, frame, metrics, title, log=title != "learning rate")
        mine = [sp for sp in spans if sp.metric is None or sp.metric in metrics]
        _draw_spans(ax, mine, labels=i == 0 or any(sp.metric is not None for sp in mine), x_range=x_range)
        _draw_resumes(ax, run)
        ax.grid(True, which="major", alpha=0.25)
        ax.tick_params(labelsize=8)
    axes[-1].set_xlabel("step", fontsize=9)
    from matplotlib.ticker import FuncFormatter

    axes[-1].xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    fig.suptitle(f"{run.run}: {verdict(run)}", fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    return fig


def _draw_panel(ax, frame: pl.DataFrame, metrics: list[str], title: str, *, log: bool) -> None:
    colors = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
    positive = True
    drew = False
    for color, metric in zip(colors, metrics):
        s = _series(frame, metric)
        finite = np.isfinite(s["value"])
        live = finite & ~s["superseded"]
        old = finite & s["superseded"]
        if old.any():
            ax.plot(*envelope(s["step"][old], s["value"][old]), color="#999999", alpha=0.45, lw=0.7,
                    label=f"{metric} (superseded)")
        if live.any():
            xs, ys = s["step"][live], s["value"][live]
            if xs.size > MAX_POINTS:  # a faint min/max band, the bin means on top
                ax.plot(*envelope(xs, ys), color=color, lw=0.6, alpha=0.35)
                ax.plot(*bin_means(xs, ys), color=color, lw=0.9, label=metric)
            else:
                ax.plot(xs, ys, color=color, lw=0.8, marker="." if xs.size < 200 else None, ms=3, label=metric,
                    drawstyle="steps-post" if title == "loss scale" else "default")
            drew = True
        positive &= bool((s["value"][finite] > 0).all()) if finite.any() else True
        bad = ~finite
        if bad.any():
            xs = s["step"][bad]
            if xs.size > 500:
                xs = xs[np.linspace(0, xs.size - 1, 500).astype(int)]
            ax.scatter(xs, np.full(xs.size, 0.03), transform=ax.get_xaxis_transform(), marker="|",
                       color="#d62728", s=30, lw=1.0, zorder=5, label=f"{metric} NaN/inf")
    if log and positive and drew:
        _log_axis(ax, base=2 if title == "loss scale" else 10)
    ax.set_ylabel(title, fontsize=9)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False,
              ncol=min(4, 2 * len(metrics)), borderaxespad=0.1, handlelength=1.5)


def _log_axis(ax, base: int) -> None:
    """A log axis with plain tick labels (2.5, 3, 4 rather than 4×10⁰) when it spans
    few decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log", base=base)
    if base != 10:
        return
    lo, hi = ax.dataLim.y0, ax.dataLim.y1
    decades = np.log10(hi / lo) if lo > 0 and hi > lo else 0.0
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(fmt)
    if decades < 1.5:
        ax.yaxis.set_minor_locator(LogLocator(base=10, subs=(2.0, 3.0, 5.0)))
        ax.yaxis.set_minor_formatter(fmt)
    else:
        ax.yaxis.set_minor_formatter(NullFormatter())


def _draw_spans(ax, spans: list[Span], *, labels: bool, x_range: tuple[float, float] | None = None) -> None:
    for sp in spans:
        if sp.line:
            ax.axvline(sp.x0, color=sp.color, lw=1.0, ls="--", alpha=0.8)
        else:
            ax.axvspan(sp.x0, max(sp.x1, sp.x0), color=sp.color, alpha=0.15, lw=0)
            ax.axvline(sp.x0, color=sp.color, lw=0.8, alpha=0.7)
    if labels and x_range is not None:
        top = ax.get_subplotspec().is_first_row() if ax.get_subplotspec() is not None else True
        shown = spans if top else [sp for sp in spans if sp.metric is not None]
        for sp, row in label_rows(shown, x_range):
            ax.text(sp.x0, 0.985 - 0.075 * row, " " + sp.label, transform=ax.get_xaxis_transform(), fontsize=7,
                    color=sp.color, ha="left", va="top",
                    bbox={"facecolor": "white", "alpha": 0.7, "lw": 0, "pad": 0.5})


def label_rows(spans: list[Span], x_range: tuple[float, float], rows: int = 3,
               char_frac: float = 0.0056) -> list[tuple[Span, int]]:
    """Stack labels that would overlap into rows below each other (at most `rows`;
    labels that fit nowhere are left out, their shading stays)."""
    lo, hi = x_range
    width = (hi - lo) or 1.0
    ends = [-1.0] * rows
    placed = []
    for sp in sorted(spans, key=lambda s: (s.x0, s.label)):
        x = (sp.x0 - lo) / width
        for r in range(rows):
            if x >= ends[r]:
                ends[r] = x + (len(sp.label) + 2) * char_frac
                placed.append((sp, r))
                break
    return placed


def _draw_resumes(ax, run: RunReport) -> None:
    for seg in [s for s in run.segments if s.get("points", 1)][1:]:  # launches that logged nothing draw no line
        at = seg.get("first_step")
        if at is not None:
            ax.axvline(at, color="#555555", lw=0.8, ls=":", alpha=0.8)


def _empty_figure(run: RunReport, dpi: int):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 1.5), dpi=dpi)
    FigureCanvasAgg(fig)
    fig.text(0.02, 0.5, f"{run.run}: no loss, grad-norm, LR or loss-scale metric to draw", fontsize=10)
    return fig


def file_name(run_name: str, used: set[str]) -> str:
    """A safe, unique file name for a run's PNG (`group/run:1` → `group_run_1.png`)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", run_name).strip("._") or "run"
    name, i = f"{stem}.png", 2
    while name.lower() in used:
        name, i = f"{stem}-{i}.png", i + 1
    used.add(name.lower())
    return name


def finding_figure(run: RunReport, f, *, dpi: int = 100):
    """The Figure of one finding's own stretch (the window the HTML zoom shows): its
    metric at full resolution with the finding shaded, the grad norm below it when the
    run has one; None when the finding names no step or the run has no frame."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .verdict import span_text
    from .zoom import extent, window

    frame = run.frame
    if frame is None or frame.height == 0:
        return None
    steps = frame.get_column("step")
    first, last = float(steps.min()), float(steps.max())
    ext = extent(f, last)
    if ext is None:
        return None
    lo, hi = window(ext, first, last)
    part = frame.filter(pl.col("step").is_between(lo, hi))
    present = set(part.get_column("metric").unique().to_list())
    metric = f.metric if f.metric in present else run.stats.get("main_metric")
    if metric not in present:
        return None
    panels = [(metric, [metric])]
    grads = sorted(m for m, r in run.metrics.items() if r == "grad_norm" and m in present and m != metric)
    if grads and run.metrics.get(metric) != "grad_norm":
        panels.append(("grad norm", grads[:1]))
    fig = Figure(figsize=(8, 2.6 + 1.1 * (len(panels) - 1)), dpi=dpi)
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(len(panels), 1, sharex=True,
                                      gridspec_kw={"height_ratios": [2.2] + [1.0] * (len(panels) - 1)}))
    color = SHADE.get(f.severity, SHADE["info"])
    for ax, (title, metrics) in zip(axes, panels):
        _draw_panel(ax, part, metrics, title, log=False)
        if ext.line:
            ax.axvline(ext.x0, color=color, lw=1.2, ls="--")
        else:
            ax.axvspan(ext.x0, max(ext.x1, ext.x0 + 0.5), color=color, alpha=0.15, lw=0)
        _draw_resumes(ax, run)
        ax.set_xlim(lo, hi)
        ax.grid(True, alpha=0.25)
        ax.tick_params(labelsize=8)
    axes[-1].set_xlabel("step", fontsize=9)
    fig.suptitle(f"{run.run}: {f.kind} ({f.severity}), {span_text(f)}", fontsize=10, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def plot_finding(run: RunReport, f, *, dpi: int = 100) -> bytes | None:
    """The PNG bytes of one finding's zoomed picture (None: nothing to zoom on)."""
    fig = finding_figure(run, f, dpi=dpi)
    if fig is None:
        return None
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def write_plots(report: Report, folder: str | Path, *, force: bool = True) -> dict[str, list[Path]]:
    """Write one PNG per run into `folder` (created), and beside it one zoomed PNG per
    finding that needs attention (`RUN--KIND-STEP.png`, at most MAX_FINDING_PNGS a run,
    worst first); returns run name → its paths, the run's picture first. Without `force`,
    a PNG already there is refused (outputs.claim) before any is drawn. The runs are gone
    over twice, by name (the files' names and claims, then the drawing), one at a time: a
    spooled sweep's runs, frames and all, are read back one at a time, never all held."""
    from ..outputs import atomic_write_bytes, claim
    from ..pipeline.runsummary import by_name

    folder = Path(folder)
    runs = by_name(report.runs)
    used: set[str] = set()
    planned: list[list[tuple[Path, int | None]]] = []  # per run: (path, the finding's place or None: the run)
    for run in runs:
        paths = [(folder / file_name(run.run, used), None)]
        for j, f in _pictured(run):
            at = f.anchor_step if f.anchor_step is not None else "x"
            paths.append((folder / file_name(f"{run.run}--{f.kind}-{at}", used), j))
        planned.append(paths)
        for path, _ in paths:
            claim(path, "--plot", force=force)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[Path]] = {}
    for run, paths in zip(runs, planned):
        written = out.setdefault(run.run, [])
        for path, j in paths:
            png = plot_run(run) if j is None else plot_finding(run, run.findings[j])
            if png is None:
                continue
            atomic_write_bytes(path, png, replace=force)  # written whole or not at all
            written.append(path)
    return out


def _pictured(run: RunReport) -> list[tuple[int, Finding]]:
    """(place, finding) of the findings that get a zoomed PNG: those needing attention in
    timeline order, the worst MAX_FINDING_PNGS of them."""
    from ..model.finding import SEVERITY_RANK
    from .verdict import split_findings

    major = split_findings(run)[0]
    worst = sorted(major, key=lambda f: -SEVERITY_RANK[f.severity])[:MAX_FINDING_PNGS]
    place = {id(f): j for j, f in enumerate(run.findings)}
    return [(place[id(f)], f) for f in major if any(f is w for w in worst)]
