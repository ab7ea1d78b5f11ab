"""Run every registered detector over a stitched run; a crash becomes a warning."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterable, Iterator

import numpy as np
import polars as pl

from .. import diagnostics
from ..allocator import trim_heap
from ..frame import is_perplexity, is_squared_norm
from .base import Detector, RunContext, Series
from ..model.finding import Finding
from .levels import LevelShiftDetector, ShiftProfile
from .registry import DETECTORS


def build_detectors(params: dict[str, dict[str, Any]] | None = None,
                    classes: Iterable[type[Detector]] = DETECTORS) -> list[Detector]:
    """Instantiate detectors, applying `{code or kind: {param: value}}` overrides."""
    params = params or {}
    out = []
    for cls in classes:
        kw: dict[str, Any] = {}
        for key in (cls.kind, cls.code):
            kw.update(params.get(key, {}))
        known = set(cls.params())
        unknown = set(kw) - known
        if unknown:
            from ..errors import ConfigError

            raise ConfigError(f"detector {cls.code} ({cls.kind}) has no parameter(s) {sorted(unknown)}; "
                              f"known: {sorted(known)}")
        out.append(cls(**kw))
    return out


def series_of(frame: pl.DataFrame, roles: dict[str, str]) -> dict[str, Series]:
    """Each metric's live (not superseded) points, sorted by step, as NumPy arrays; one
    point a step (see `one_per_step`). A squared grad norm is judged as its root, a
    perplexity that stands for the loss as its log."""
    given = frame
    if "superseded" in frame.columns and (frame.get_column("superseded").any()
                                          or frame.get_column("superseded").null_count()):
        frame = frame.filter(~pl.col("superseded"))
    live = frame.filter(pl.col("value").is_not_null()) if frame.get_column("value").null_count() else frame
    out: dict[str, Series] = {}
    steps: list[np.ndarray] = []
    # wall times are read later only from the frame the caller keeps (a filtered copy would be held)
    for metric, step, value, wall in _by_metric(live, lazy_wall=live is given):
        if callable(wall) and step.size > 1 and not (step[1:] > step[:-1]).all():
            wall = wall()  # points logged twice at a step: one_per_step picks their wall times
        step, value, wall = one_per_step(step, value.astype(np.float64, copy=False), wall)
        step = _shared(step, steps)
        role = roles.get(metric, "other")
        scale = ""
        if role == "grad_norm" and is_squared_norm(metric):
            with np.errstate(invalid="ignore"):
                value, scale = np.sqrt(value), "root"
        elif role in ("loss", "eval_loss") and is_perplexity(metric):
            with np.errstate(invalid="ignore", divide="ignore"):
                value, scale = np.log(value), "log"  # a perplexity standing for the loss is judged as the loss
        out[metric] = _LazyWall(metric=metric, role=role, step=step, value=value, wall_time=wall, scale=scale)
    return out


def _shared(step: np.ndarray, seen: list[np.ndarray]) -> np.ndarray:
    """The step array of an earlier metric when this one's is the same (metrics logged
    together: 8 bytes a point each otherwise), read-only as every shared one is, so that no
    detector can change another metric's steps."""
    for other in seen:
        if other is step:
            return other
        if other.size == step.size and other[-1] == step[-1] and np.array_equal(other, step):
            return other
    step.flags.writeable = False
    seen.append(step)
    return step


class _LazyWall(Series):
    """A series whose wall times are gathered from the frame when a detector first reads
    them (few do: the throughput family, on one series), not for every metric up front."""

    @property
    def wall_time(self) -> np.ndarray | None:
        wall = self.__dict__.get("_wall")
        return wall() if callable(wall) else wall

    @wall_time.setter
    def wall_time(self, wall) -> None:
        if callable(wall):  # a thunk: read once, then kept
            def once(thunk=wall):
                got = thunk()
                self.__dict__["_wall"] = got
                return got
            wall = once
        self.__dict__["_wall"] = wall


def _by_metric(live: pl.DataFrame, lazy_wall: bool = False) -> Iterator[tuple[str, np.ndarray, np.ndarray, Any]]:
    """(metric, step, value, wall_time) of each metric, rows sorted by (step, seq), metrics
    in the order they first appear so sorted. Readers write rows in `seq` order and steps
    rarely go back within a metric: then the rows of each metric in frame order are that
    order already, and one pass over the metric codes per metric (no sorted copy of the
    frame) finds them (and, with `lazy_wall`, a metric's wall times are a function that
    finds them again when called). Otherwise the frame is sorted."""
    groups = _metric_runs_in_order(live, lazy_wall) if live.height else None
    if groups is None:
        for (metric,), part in live.sort("step", "seq").group_by("metric", maintain_order=True):
            yield (metric, part.get_column("step").to_numpy(), part.get_column("value").to_numpy(),
                   part.get_column("wall_time").to_numpy())
        return
    yield from groups


def _metric_runs_in_order(live: pl.DataFrame, lazy_wall: bool = False) -> list[tuple[str, np.ndarray, np.ndarray, Any]] | None:
    """Each metric's rows found and gathered one metric at a time: one metric's row
    indices are held, not every metric's (8 bytes a point), and a metric's steps are shared
    with an earlier metric's the moment they are gathered (`_shared`), so at most one extra
    step array is held, not one a metric. None when a metric's steps go back (the caller sorts)."""
    seq = live.get_column("seq").to_numpy()
    if not (seq[1:] > seq[:-1]).all():
        return None
    codes = live.get_column("metric").to_physical().to_numpy()
    present = np.flatnonzero(np.bincount(codes))
    if present.size > 64:
        return None  # many metrics: one pass each would cost more than the sort
    step_all = live.get_column("step").to_numpy()
    value_all = live.get_column("value").to_numpy()
    wall_all = None if lazy_wall else live.get_column("wall_time").to_numpy()
    seen: list[np.ndarray] = []
    groups = []
    for code in present.tolist():
        rows = np.flatnonzero(codes == code)
        step = step_all[rows]
        if (step[1:] < step[:-1]).any():
            return None
        first = int(rows[0])
        wall = (_wall_of(live.get_column("wall_time"), live.get_column("metric"), code) if lazy_wall
                else wall_all[rows])
        groups.append((int(step[0]), int(seq[first]), first, _shared(step, seen), value_all[rows], wall))
    groups.sort(key=lambda g: g[:2])
    names = live.get_column("metric").gather([g[2] for g in groups]).to_list()
    return [(name, step, value, wall) for name, (*_, step, value, wall) in zip(names, groups)]


def _wall_of(wall: pl.Series, metric: pl.Series, code: int):
    """The wall times of the metric coded `code`, in row order, when called."""
    return lambda: wall.to_numpy()[np.flatnonzero(metric.to_physical().to_numpy() == code)]


def one_per_step(step: np.ndarray, value: np.ndarray, wall: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points logged more than once at a step (ranks or parallel writers logging the same
    metric, a value logged by two hooks) become their mean (NaN if any is NaN): the
    detectors judge point-to-point noise, and a duplicated point would halve it."""
    if step.size < 2 or not (np.diff(step) == 0).any():
        return step, value, wall
    first, counts = np.unique(step, return_index=True, return_counts=True)[1:]
    with np.errstate(invalid="ignore"):
        mean = np.add.reduceat(value, first) / counts
    return step[first], mean, wall[first]


def run_detectors(ctx: RunContext, detectors: list[Detector], *, shift_profile: bool = False) -> list[Finding]:
    """Every detector's findings. With `shift_profile`, the main loss's level-shift profile is
    taken as soon as the level-shift detector is done (`shift_profile_of` then returns it) and
    that detector's per-point profiles are let go: they are arrays of the run's length (~10 MB
    at 1M points) that the later detectors would otherwise run beside (the analysis's memory
    peak). The same profile, from the same series and parameters."""
    findings: list[Finding] = []
    for det in detectors:
        with _crash_is_a_warning(det, ctx.run):
            if det.roles:
                for s in ctx.series.values():
                    if s.role in det.roles and len(s):
                        findings.extend(det.detect(s, ctx))
            else:
                findings.extend(det.detect_run(ctx))
        trim_heap()  # what this detector's NumPy arrays freed is not kept beside the next one's (allocator)
        if shift_profile and isinstance(det, LevelShiftDetector):
            ctx.__dict__[_PROFILE] = _profile_of(det, ctx)
            det.__dict__.pop("_memo", None)  # LevelShiftDetector._profile's memo (rebuilt on demand)
    return findings


_PROFILE = "_shift_profile"
"""Where `run_detectors(shift_profile=True)` keeps the profile on the context."""


def shift_profile_of(ctx: RunContext, detectors: list[Detector]) -> ShiftProfile | None:
    """The main loss's level-shift profile (for runs analysed together), with the run's
    level-shift parameters; a crash is a warning, as for a detector."""
    if _PROFILE in ctx.__dict__:
        return ctx.__dict__[_PROFILE]
    det = next((d for d in detectors if isinstance(d, LevelShiftDetector)), None)
    return None if det is None else _profile_of(det, ctx)


def _profile_of(det: LevelShiftDetector, ctx: RunContext) -> ShiftProfile | None:
    main = ctx.main("loss")
    if main is None:
        return None
    with _crash_is_a_warning(det, ctx.run, " (shift profile)"):
        return det.shift_profile(main)
    return None


@contextmanager
def _crash_is_a_warning(det: Detector, run: str, what: str = "") -> Iterator[None]:
    """A crashing detector never kills the report: it becomes a warning naming it and the run."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001
        diagnostics.warn(f"detector {det.code} ({det.kind}) crashed on run {run!r}{what}: "
                         f"{type(exc).__name__}: {exc}")
