"""Sibling log files that are one run's splits: the training file and its held-out twin, in one folder.

A script that writes its training curve to `train_loss_deeper.txt` and its evaluations to
`val_loss_deeper.txt` (or `train_loss.txt` beside `val_loss.txt`, `train_log.txt` beside `test_log.txt`)
logs one run in two files: the names are the same but for the split word, and a person reads the second
as that run's validation. Read apart, each is a run with a `loss`, and the held-out one's rise is judged
as a training loss's (a spike that "never came back") while the overfitting it shows is never seen.

Discovery asks `family_key` for the files it reads alone; the files of one split family are read
together and `join` makes them one run: the training file's table keeps its names, a held-out file's
metrics take its split word (`loss` -> `val_loss`) unless they already say one. They join only on one
counter: the held-out steps inside the training file's span, or as many points a line each where both
count their lines (`train_loss.txt` and `val_loss.txt` of one value an epoch); a per-batch file beside a
per-epoch one, both in line order, stays apart (their line numbers are not one clock). A folder of measure
files (`train_loss.txt`, `train_acc.txt`, `val_loss.txt`: a split and a measure each, one value a line) is one
run the same way: the files on the training loss's clock join it, so its loss is judged beside its accuracy.
"""
from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from .launchfiles import name_words

if TYPE_CHECKING:
    import polars as pl

    from .importers.base import Table

PREFIX = "splits:"
"""Group keys of split families start so."""

_TRAIN = re.compile(r"^(?:train|training|trn)$", re.I)
_HELD = re.compile(r"^(?:val|valid|validation|eval|evaluation|dev|test)$", re.I)
_COUNTERS = frozenset({"epoch", "step", "iter", "iteration", "global_step", "steps", "epochs"})
"""A held-out file's counters (`epoch: 3 iter: 2253 loss: ...`) say where it was measured, not what."""


def split_of(path: Path) -> tuple[str, str] | None:
    """(the name with its split word left out, the split word) for a name holding exactly one split word
    (`val_loss_deeper.txt` -> (`*_loss_deeper`, `val`)); else None."""
    words = name_words(path)
    at = [i for i, w in enumerate(words) if _TRAIN.match(w) or _HELD.match(w)]
    if len(at) != 1 or len(words) < 2:
        return None
    i = at[0]
    stem = "_".join(words[:i] + ["*"] + words[i + 1:]).lower()
    return stem, words[i].lower()


@lru_cache(maxsize=16)
def _folder_splits(folder: str, suffix: str) -> dict[str, frozenset[str]]:
    """Per name-without-split-word, the split words of the folder's files of this suffix."""
    from .importers.base import kind_suffix

    out: dict[str, set[str]] = {}
    try:
        names = [e.name for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return {}
    for name in names:
        p = Path(name)
        got = split_of(p) if kind_suffix(p) == suffix else None
        if got is not None:
            out.setdefault(got[0], set()).add(got[1])
    return {k: frozenset(v) for k, v in out.items()}


def measure_file(path: Path) -> bool:
    """A name that is a split word and a measure (`train_loss.txt`, `train_acc.txt`, `test_accuracy.txt`):
    one series of a run the folder logs file by file."""
    from .frame import infer_role

    got = split_of(path)
    return got is not None and len(name_words(path)) == 2 and infer_role(got[0].replace("*", "").strip("_")) != "other"


@lru_cache(maxsize=16)
def _folder_measures(folder: str, suffix: str) -> int:
    """How many of the folder's files of this suffix are measure files."""
    from .importers.base import kind_suffix

    try:
        names = [e.name for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return 0
    return sum(1 for n in names if kind_suffix(Path(n)) == suffix and measure_file(Path(n)))


def family_key(path: Path, group: str) -> str:
    """The group a file read on its own is read in: its split family's when the folder holds one training
    file and a held-out file of its name and suffix, or its folder's measure files' when it is one of
    several (`train_loss.txt`, `train_acc.txt`); else `group`."""
    from .importers.base import kind_suffix

    if group != str(path):
        return group  # a launch family, or a format that groups its own files
    got = split_of(path)
    if got is None:
        return group
    if measure_file(path) and _folder_measures(str(path.parent), kind_suffix(path)) >= 2:
        return f"{PREFIX}{path.parent / '*'}{kind_suffix(path)}"
    splits = _folder_splits(str(path.parent), kind_suffix(path)).get(got[0], frozenset())
    if sum(bool(_TRAIN.match(s)) for s in splits) != 1 or not any(_HELD.match(s) for s in splits):
        return group
    return f"{PREFIX}{path.parent / got[0]}{kind_suffix(path)}"


def join(tables: list[Table], group: str) -> list[Table]:
    """The tables of a split family as one run: the training file's under its own key, each held-out
    file's beside it in the same segment with its metrics named for its split; tables that do not share
    the training file's counter are left as they were."""
    if not group.startswith(PREFIX):
        return tables
    own = [t for t in tables if t.run_key == str(t.source) and t.segment_key == str(t.source) and t.frame.height]
    train = [t for t in own if _split(t) is not None and _TRAIN.match(_split(t))]
    if not train:
        return tables
    first = max(train, key=lambda t: (_names_loss(t), _points(t)))  # the training loss's file leads the run
    out = {}
    names = set(_metrics(first))
    for t in own:
        split = _split(t)
        if t is first or split is None or not _one_clock(first, t):
            continue
        frame = _named_for(t, split, _metrics(first)) if _HELD.match(split) else t.frame
        mine = set(frame.get_column("metric").unique().cast(str).to_list())
        if mine & names:
            continue  # the same names twice: two runs, not one run's series
        names |= mine
        out[id(t)] = replace(t, frame=frame, run_key=first.run_key, segment_key=first.segment_key, order=first.order,
                             meta={k: v for k, v in t.meta.items() if not k.startswith(("plan.", "step.", "metric."))})
    return [out.get(id(t), t) for t in tables]


def _names_loss(table: Table) -> bool:
    from .frame import infer_role

    return any(infer_role(m) == "loss" for m in _metrics(table))


def _split(table: Table) -> str | None:
    got = split_of(Path(str(table.source)))
    return got[1] if got else None


def _metrics(table: Table) -> set[str]:
    return set(table.frame.get_column("metric").unique().cast(str).to_list())


def _one_clock(train: Table, held: Table) -> bool:
    """Whether the held-out table's steps are on the training table's counter: both count their lines with
    as many points a series, or neither does and the held-out steps lie inside the training span."""
    order = [t.meta.get("step.from") == "order" for t in (train, held)]
    if any(order):
        return all(order) and _points(train) == _points(held)
    lo, hi = train.frame.get_column("step").min(), train.frame.get_column("step").max()
    steps = held.frame.get_column("step")
    return steps.min() >= lo and steps.max() <= hi + max(1, 0.05 * (hi - lo))


def _points(table: Table) -> int:
    """Points of the table's longest series."""
    import polars as pl

    return int(table.frame.group_by("metric").agg(pl.len()).get_column("len").max())


def _named_for(table: Table, split: str, train_metrics: set[str]) -> "pl.DataFrame":
    """The held-out table's frame with each metric named for its split (`loss` -> `val_loss`; a name that
    already says a split kept), its counters left out where the training file logs them too."""
    import polars as pl

    names = {}
    for m in _metrics(table):
        words = [w for w in re.split(r"[_\W]+", m.lower()) if w]
        if m.lower() in _COUNTERS:
            names[m] = None if m in train_metrics else m
        elif any(_HELD.match(w) or _TRAIN.match(w) for w in words):
            names[m] = m
        else:
            names[m] = f"{split}_{m}"
    frame = table.frame.filter(pl.col("metric").cast(str).is_in([m for m, n in names.items() if n is not None]))
    dtype = frame.schema["metric"]
    return frame.with_columns(pl.col("metric").cast(pl.String).replace({m: n for m, n in names.items() if n})
                              .cast(dtype))
