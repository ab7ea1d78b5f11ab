"""Sibling log files that are one run's launches: one file per launch, in one folder.

A job relaunched by hand is often logged to a new file beside the old one (`train.log`, then
`train_resume.log`; `train_pd_30.log`, then `train_pd_resume_from_30.log`; `train_from_11.log`,
`train_final.log`). A person reads them as one run: the names share a stem and the later ones
say what they are (resume, continue, restart, retry, attempt, from N, final), and their records
are the same metrics on a counter that carries on (or goes back to the checkpoint) rather than
starting again beside the others. Several runs in one folder look otherwise: names that differ by
a setting (`train_lr0.1.log`, `train_seed2.log`) with no launch word, each counting from the start.

Discovery asks `family_key` for the files it reads alone; files of one family are read together
and `join` decides, from what was read, which tables are launches of one run (the timeline itself,
overlaps, counters that went back, is judged by stitching, not here).
"""
from __future__ import annotations

import os
import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .importers.base import Table

PREFIX = "launches:"
"""Group keys of launch families start so (any other group key is a path or a format's own key)."""

_LAUNCH_WORD = re.compile(r"^(?:resum(?:e|ed|es|ing)|continu(?:e|ed|es|ing|ation)|cont|restart(?:ed|s)?|relaunch(?:ed)?"
                          r"|retr(?:y|ied|ies)|rerun|attempt\d*|from|final|full|original|orig|part\d*|launch\d*"
                          r"|recover(?:ed|y)?|reload(?:ed)?)$", re.I)
"""A name word that says which launch of a run a file logs (`train_resume`, `train_pd_resume_from_30`,
`train_original_12500`, `train_final`): it and every word after it (`_gpu_fail`, `_break3_attempt2_killed`)
describe the launch, the words before it name the run."""
_SEP = re.compile(r"[_\-. ]+")
_NUMBER = re.compile(r"^\d+$")


def name_words(path: Path) -> list[str]:
    """The words of a file's name without its suffixes (`train_resume.log` -> `train`, `resume`)."""
    name = path.name
    for _ in range(3):  # `train.log.1`, `run.out.txt`: the suffixes a launcher appends
        stem, dot, tail = name.rpartition(".")
        if not dot or not stem or len(tail) > 5 or not (tail.isalpha() or tail.isdigit()):
            break
        name = stem
    return [w for w in _SEP.split(name) if w]


def family(path: Path) -> tuple[str, bool] | None:
    """(the run's stem, whether the name names a launch): the words before the first launch word, else
    the name without its trailing numbers (`train_pd_30` is `train_pd` at epoch 30); None for a name
    that is only a launch word or numbers."""
    words = name_words(path)
    cut = next((i for i, w in enumerate(words) if _LAUNCH_WORD.match(w)
                and not (w.lower() == "from" and words[i + 1:i + 2] in (["scratch"], ["Scratch"]))), None)
    stem = words[:cut] if cut is not None else words
    while stem and _NUMBER.match(stem[-1]):
        stem = stem[:-1]
    if not stem:
        return None
    return "_".join(stem).lower(), cut is not None


@lru_cache(maxsize=16)
def _folder_families(folder: str, suffix: str) -> dict[str, tuple[int, int]]:
    """Per stem, the files of this suffix in the folder and how many of them name a launch."""
    counts: dict[str, tuple[int, int]] = {}
    try:
        entries = [e.name for e in os.scandir(folder) if e.is_file()]
    except OSError:
        return counts
    for name in entries:
        p = Path(name)
        if _suffix(p) != suffix:
            continue
        got = family(p)
        if got is None:
            continue
        n, named = counts.get(got[0], (0, 0))
        counts[got[0]] = (n + 1, named + got[1])
    return counts


def _suffix(path: Path) -> str:
    from .importers.base import kind_suffix

    return kind_suffix(path)


def family_key(path: Path, group: str) -> str:
    """The group a file read on its own (`group` is its path) is read in: its launch family's when the
    folder holds another file of its stem and suffix and one of them names a launch; else `group`."""
    if group != str(path):
        return group  # a format that groups its own files (event files of a folder, W&B runs) knows its runs
    got = family(path)
    if got is None:
        return group
    n, named = _folder_families(str(path.parent), _suffix(path)).get(got[0], (0, 0))
    if n < 2 or not named:
        return group
    return f"{PREFIX}{path.parent / got[0]}{_suffix(path)}"


def join(tables: list[Table], group: str) -> list[Table]:
    """The tables of a launch family with the launches of one run under one run key, in launch order;
    the others as they were. The first launch is the file that names no launch (at most one may), else
    the one whose counter starts first; a later launch shares a metric with it and starts further on
    its counter (it carried on, or went back to a checkpoint inside it): one that counts from the start
    again beside it is another run. A launch that logged nothing joins too. Each file stays a segment."""
    if not group.startswith(PREFIX):
        return tables
    own = [t for t in tables if t.run_key == str(t.source) and t.segment_key == str(t.source)]
    plain = [t for t in own if not _names_launch(t)]
    with_data = [t for t in own if t.frame.height]
    if len(own) < 2 or len(plain) > 1 or not with_data:
        return tables  # several runs that name no launch: which one a resume continued is not said
    first = plain[0] if plain else min(with_data, key=lambda t: _span(t, _metrics(t))[0])
    if not first.frame.height:
        return tables
    shared = _metrics(first)
    members = [first]
    for t in own:
        if t is first:
            continue
        common = shared & _metrics(t)
        if not t.frame.height or (common and _span(t, common)[0] > _span(first, common)[0]):
            members.append(t)
    if len(members) < 2:
        return tables
    ordered = [first, *sorted(members[1:], key=lambda t: _launch_order(t, shared))]
    metas = launch_endings(ordered, shared)
    key = str(first.source)
    joined = {id(t): replace(t, run_key=key, order=(i,), meta=metas[i]) for i, t in enumerate(ordered)}
    return [joined.get(id(t), t) for t in tables]


def launch_endings(ordered: list[Table], shared: set[str]) -> list[dict]:
    """Each launch's meta with the error an earlier file ends in told as a launch that died and was
    started again (`plan.launch_errors`, on the last launch, as a text log with several launches tells
    them): the run's own ending (`plan.error`) is its last launch's."""
    metas = [dict(t.meta) for t in ordered]
    died: list[dict] = []
    for i, (t, meta) in enumerate(zip(ordered[:-1], metas)):
        died.extend(meta.pop("plan.launch_errors", None) or ())
        error, line_no = meta.pop("plan.error", None), meta.pop("plan.error_line_no", None)
        if not error:
            continue
        after = next((u for u in ordered[i + 1:] if shared & _metrics(u)), None)
        died.append({"error": error, "line_no": line_no, "source": str(t.source),
                     "last_step": int(_span(t, shared & _metrics(t))[1]) if shared & _metrics(t) else None,
                     "next_step": int(_span(after, shared & _metrics(after))[0]) if after is not None else None})
    if died:
        last = metas[-1]
        own = [d for d in died if d.get("line_no") != last.get("plan.error_line_no") or not last.get("plan.error")]
        own += [{**d, "line_no": None} for d in died if d not in own]  # another file's line number, not this one's
        last["plan.launch_errors"] = own + list(last.get("plan.launch_errors") or ())
    return metas


def _names_launch(table: Table) -> bool:
    got = family(Path(str(table.source)))
    return bool(got and got[1])


def _metrics(table: Table) -> set[str]:
    return set(table.frame.get_column("metric").unique().cast(str).to_list()) if table.frame.height else set()


def _span(table: Table, metrics: set[str]) -> tuple[float, float]:
    """First and last step at which the table logs any of `metrics`."""
    import polars as pl

    steps = table.frame.filter(pl.col("metric").cast(str).is_in(sorted(metrics))).get_column("step")
    return float(steps.min()), float(steps.max())


def _launch_order(table: Table, shared: set[str]) -> tuple:
    """Later launches by where their shared metrics start and end on the counter (a launch killed early
    comes before the relaunch from the same checkpoint that ran on); one that logged nothing last."""
    common = shared & _metrics(table)
    if not common:
        return (1, 0.0, 0.0, str(table.source))
    return (0, *_span(table, common), str(table.source))
