"""The curve a person reads a run by when no metric's name says what to judge it by.

A log whose objective is named in a word the role vocabulary lacks (`Avg` of an episode's return,
an SPSA optimiser's `Jp`, a bare `Train`) or in a language it does not know is still read by its
curve: the one that moves along the run. Counters and clocks are not it (whole numbers that never
go down or rise by one stride, time stamps, names such as `time`, `epoch`, `Эпизод`), nor settings,
spreads, identities, constants, or whole numbers that keep coming back to a few levels (a model's
layer sizes printed once a layer: a structure, not a curve). Among the rest, the curve with most finite points (within a tenth), one with
a steady trend before one without, then the writer's first.

Its role comes from its shape, as `importers/columnshapes.py` tells a headerless column's: a steady
fall (rank correlation with the order at most TREND, or a fall STEADY times its typical move) is a
loss; a steady rise is a score (within [0, 1] or [0, 100]: an accuracy) or a reward. A curve with no
steady trend gets no role the detectors judge a curve by: the run is read for its non-finite values
and how it ended, never for spikes or plateaus whose direction the data does not say. The guess is
kept on the roles (`Roles.guessed`), so the report says the run was judged by a curve whose role was
read from its trend, and how to name it (`--role TAG=loss`).
"""
from __future__ import annotations

import re

import polars as pl

from .importers.columnshapes import STEADY, TREND

JUDGED = ("loss", "eval_loss", "reward", "accuracy")
"""Roles a run is judged by (`coverage.LOSS_ROLES` and `SCORE_ROLES`): a run with one needs no guess."""
MIN_POINTS = 5
"""Finite points a curve needs at least for its shape to say anything."""
FALLING, RISING, FLAT = "falling", "rising", "no steady trend"

_COUNTER = re.compile(
    r"(?:^|[/_\-. ])(?:epoch|epochs|ep|step|steps|global_?step|iter|iters|iteration|it|episode|episodes|batch|round"
    r"|update|updates|generation|gen|trial|run|k|n|idx|index|sample|samples|frames?|timesteps?)(?:$|[/_\-. \d])"
    r"|эпох|шаг|итерац|эпизод|раунд|поколени|epoche|schritt|iteration|époque|étape|itération|épisode"
    r"|época|paso|iteración|episodio|passo|iteração|episódio|epoca|iterazione|dönem|adım|iterasyon|yineleme|bölüm"
    r"|bước|vòng|lượt|tập|langkah|iterasi|轮|步|迭代|回合|エポック|ステップ|反復|에폭|스텝|반복", re.I)
"""What counts: an epoch, a step, an iteration, an episode, a batch, in the languages logs are printed in.
A name of a count is a count (`Total Steps` of an episode measures steps: which way is better is not said)."""
_CLOCK = re.compile(
    r"time|wall|clock|elapsed|duration|date|timestamp|remaining|(?:^|[/_\-. ])(?:t\d*|ts|eta|hours?|minutes?|mins?|left"
    r"|passed|load|loading|init|setup|startup|wait)(?:$|[/_\-. ])"
    r"|sec(?:ond)?s?(?:$|[/_\-. ])|время|врем|zeit|dauer|temps|durée|tiempo|duración|tempo|durata|süre|zaman"
    r"|thời gian|waktu|durasi|时间|耗时|時間|시간", re.I)
"""A clock, a duration or a set-up's time (`t_wall`, `use_time`, `qsec_job`, `Remaining`, `to_load_op`, `время`):
it moves, but not as training goes."""
_SIDE = re.compile(
    r"(?:^|[/_\-. ])(?:std|stdev|sigma|var|min|max|count|num|best|seed|id|size|lr|eps|epsilon|gamma"
    r"|beta|alpha|lambda|temperature|temp|memory|mem|pid|port|rank|ids?|features|dims?|column|line|char|layers?"
    r"|params|parameters|channels|shape|width|height|depth|heads|vocab|version)(?:$|[/_\-. \d])"
    r"|^[σεαβγλτ]$|best|лучш|beste|meilleur|mejor",
    re.I)
"""A spread, a setting, a running best, a size, an identity or a model's shape (`σ`, `ε`, `BestAvg`, `batch_size`,
`RLRunner_pid`, `out_features`, a message's `column`): no curve of the run's own."""


class Roles(dict):
    """The roles of a run's metrics, with the metrics whose role was read from their curve's shape
    (`guessed`: metric -> falling / rising / no steady trend). A plain dict to every reader."""

    guessed: dict[str, str]

    def __init__(self, roles=(), guessed: dict[str, str] | None = None):
        super().__init__(roles)
        self.guessed = dict(guessed or {})


def needs_guess(roles: dict[str, str]) -> bool:
    """No metric takes a role the run can be judged by."""
    return bool(roles) and not any(r in JUDGED for r in roles.values())


def candidates(roles: dict[str, str], named=frozenset(), no_curve=lambda m: False) -> list[str]:
    """Metrics that may be the run's curve by name: role `other`, no counter, clock, setting or spread, no
    arm of a sweep (`learning_rate_0.1`: what the arms measured is unknown, a person cannot read it either),
    none whose role the user gave (`--role TAG=other` says it is no curve to judge); `no_curve` is the role
    table's own test of such names (`frame.py` passes it: the roles import this module, not the reverse)."""
    return [m for m, r in roles.items() if r == "other" and m not in named and not _COUNTER.search(m)
            and not _CLOCK.search(m) and not _SIDE.search(m) and not no_curve(m)]


def shapes(frame: pl.DataFrame, metrics: list[str]) -> pl.DataFrame:
    """Per metric (in the writer's order): finite points, distinct values, whether it counts (whole
    numbers that never go down, or that rise by one stride), whether it is a time stamp, its rank
    correlation with the order, and its rise against its typical move."""
    if "superseded" in frame.columns:  # the timeline a person reads: a later launch's points, not those it replaced
        frame = frame.filter(~pl.col("superseded"))
    f = (frame.select("seq", pl.col("metric").cast(pl.String), pl.col("value").cast(pl.Float64))
         .filter(pl.col("metric").is_in(metrics) & pl.col("value").is_finite())
         .sort("seq"))
    v = pl.col("value")
    d = v.diff()
    head = v.head(pl.max_horizontal(pl.len() // 20, 3)).median()
    tail = v.tail(pl.max_horizontal(pl.len() // 10, 3)).median()
    out = f.group_by("metric", maintain_order=True).agg(
        pl.len().alias("points"),
        v.n_unique().alias("distinct"),
        ((v % 1 == 0).all() & ((d.drop_nulls() >= 0).all() | (d.drop_nulls().n_unique() == 1))).alias("counts"),
        ((v > 1e9).all() & (d.drop_nulls() >= 0).all()).alias("stamp"),
        (v % 1 == 0).all().alias("whole"),
        pl.corr(v, pl.int_range(pl.len()), method="spearman").alias("trend"),
        (tail - head).alias("moved"),
        d.abs().median().alias("move"),
        v.min().alias("lo"), v.max().alias("hi"),
    )
    order = {m: i for i, m in enumerate(metrics)}
    return out.with_columns(pl.col("metric").replace_strict(order, default=len(order)).alias("order"))


def direction(row: dict) -> str:
    """Falling, rising or no steady trend, as columnshapes tells a loss from a score."""
    r, moved, move = row["trend"], row["moved"] or 0.0, row["move"] or 0.0
    steady = abs(moved) > 0 and abs(moved) >= STEADY * move
    if (r is not None and r <= TREND) or (steady and moved < 0):
        return FALLING
    if (r is not None and r >= -TREND) or (steady and moved > 0):
        return RISING
    return FLAT


def read_curve(frame: pl.DataFrame, roles: dict[str, str], named=frozenset(),
               no_curve=lambda m: False) -> tuple[str, str] | None:
    """The curve a person reads the run by and its shape, None when no metric moves as a curve does."""
    names = candidates(roles, named, no_curve)
    if not names or frame.is_empty():
        return None
    rows = shapes(frame, names).filter(
        (pl.col("points") >= MIN_POINTS) & (pl.col("distinct") >= 3) & ~pl.col("counts") & ~pl.col("stamp")
        & (~pl.col("whole") | (pl.col("distinct") >= 0.5 * pl.col("points")))
    ).to_dicts()
    if not rows:
        return None
    most = max(r["points"] for r in rows)
    tied = [(r, direction(r)) for r in rows if r["points"] >= 0.9 * most]
    row, shape = min(tied, key=lambda t: (t[1] == FLAT, t[0]["order"]))
    return row["metric"], shape


def role_of_shape(metric: str, shape: str, lo: float, hi: float, eval_named: bool) -> str:
    """A falling curve is a loss (held-out where its name says so); a rising one a score within
    [0, 1] or [0, 100] (an accuracy), else a reward; one with no trend keeps role `other`."""
    if shape == FALLING:
        return "eval_loss" if eval_named else "loss"
    if shape == RISING:
        return "accuracy" if lo >= 0 and hi <= 100 else "reward"
    return "other"


def guess(frame: pl.DataFrame, roles: dict[str, str], *, is_eval, named=frozenset(), no_curve=lambda m: False) -> Roles:
    """`roles` with the run's curve given a role from its shape where no metric has a judged role."""
    if not needs_guess(roles):
        return roles if isinstance(roles, Roles) else Roles(roles)
    found = read_curve(frame, roles, named, no_curve)
    if found is None:
        return Roles(roles)
    metric, shape = found
    live = frame.filter(~pl.col("superseded")) if "superseded" in frame.columns else frame
    values = live.filter(pl.col("metric") == metric).get_column("value").cast(pl.Float64)
    values = values.filter(values.is_finite())
    out = Roles(roles, {metric: shape})
    out[metric] = role_of_shape(metric, shape, float(values.min()), float(values.max()), is_eval(metric))
    return out
