"""Run names: the shortest unique path of each run, whatever folder the user passed.

A run is named by the last components of its path (its folder, or its file when the file
is not one of the generic names like `metrics.csv`), as few as make it unique among the
runs analysed together: three folders `a/run`, `b/run`, `c/run` are `a/run`, `b/run`,
`c/run`, and the same whether the user passed their parent or its parent. A baseline
written from `real/deepspeed_chat` therefore names runs as a check of `real/` does (and
`check.Baseline` also accepts a name that is a path suffix of the other, for the run that
needed a longer name once more runs stood beside it).

A name the format gives (a W&B display name, an MLflow run name) is kept; two runs with
the same such name get their shortest unique path in front of it.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Sequence

GENERIC_FILE_NAMES = {"metrics.csv", "trainer_state.json", "main.log", "log.txt", "training.log",
                      "wandb-history.jsonl", "history.csv", "history.jsonl", "history.parquet",
                      "metrics.json", "metrics.jsonl", "scalars.json", "log.jsonl",
                      "results.csv", "progress.csv", "progress.json", "summary.csv", "monitor.csv"}
"""Files named by the tool that wrote them, not by the run: the run is their folder."""


def _parts(source: str) -> tuple[str, ...]:
    """A source as path components (absolute, symlinks not followed: the path the user sees);
    a source that is not a file path (`wandb:<id>`, a URL) is split on slashes as it is."""
    if "://" in source or (":" in source and not os.path.isabs(source) and not os.path.exists(source)
                           and not os.path.splitdrive(source)[0]):
        return tuple(p for p in source.replace("://", "/").split("/") if p)
    return tuple(p for p in os.path.abspath(source).replace(os.sep, "/").split("/") if p)


def key_name(key: str) -> str:
    """The name a run gets from its key on its own (the last component of its path, a
    generic file name skipped), before it is compared with the other runs."""
    parts = _parts(key)
    if len(parts) > 1 and parts[-1] in GENERIC_FILE_NAMES:
        parts = parts[:-1]
    return parts[-1] if parts else key


def run_parts(sources: Sequence[str], name: str) -> tuple[tuple[str, ...], bool]:
    """(the path components of a run, whether its name was given by its format).

    The path is the common path of its sources, cut after the component its first name
    came from (a TensorBoard run is its folder, not its one event file); a name that is no
    component of it was given by the format (a W&B display name)."""
    split = [_parts(s) for s in sources if s]
    common: list[str] = []
    for level in zip(*split) if split else ():
        if any(p != level[0] for p in level):
            break
        common.append(level[0])
    if name in common:
        return tuple(common[:len(common) - common[::-1].index(name)]), False
    if len(common) > 1 and common[-1] in GENERIC_FILE_NAMES:
        common.pop()
    return tuple(common) or (name,), True


def unique_names(paths: Sequence[tuple[str, ...]], given: Sequence[str | None]) -> list[str]:
    """For each run (its path components, the name its format gave or None) the shortest
    unique name: the fewest trailing components no other run shares; a given name stays
    as it is unless another run has it too."""
    n = len(paths)
    depth = [1] * n
    while True:
        names = ["/".join(p[-d:]) for p, d in zip(paths, depth)]
        clash: dict[str, list[int]] = {}
        for i, name in enumerate(names):
            if given[i] is None:
                clash.setdefault(name, []).append(i)
        # runs at the same path (two runs in one file) cannot be told apart by a longer path
        grow = [i for ids in clash.values() if len(ids) > 1 and len({paths[j] for j in ids}) > 1
                for i in ids if depth[i] < len(paths[i])]
        if not grow:
            break
        for i in grow:
            depth[i] += 1
    out = [given[i] if given[i] is not None else names[i] for i in range(n)]
    counts: dict[str, int] = {}
    for name in out:
        counts[name] = counts.get(name, 0) + 1
    for i in range(n):
        if given[i] is not None and counts[out[i]] > 1:
            out[i] = f"{names[i]}/{given[i]}"
    seen: dict[str, int] = {}
    for i, name in enumerate(out):  # the same path twice (two runs in one file, no names): number them
        k = seen[name] = seen.get(name, 0) + 1
        if k > 1:
            out[i] = f"{name}#{k}"
    return out


def name_runs(runs: list, *, sources_of=lambda r: r.sources, name_of=lambda r: r.run) -> list[str]:
    """The final names of runs analysed together (RunReports or discover.Runs), from their
    sources and first names (see run_parts)."""
    parts = [run_parts(sources_of(r), name_of(r)) for r in runs]
    return unique_names([p for p, _ in parts], [name_of(r) if given else None for r, (_, given) in zip(runs, parts)])


def rename_reports(reports: list) -> None:
    """Give RunReports their final names: the report, its findings and its frame."""
    for rep, name in zip(reports, name_runs(reports)):
        if rep.run != name:
            rename_report(rep, name)


def rename_report(rep, name: str) -> None:
    """One RunReport renamed: the report, its findings and its frame."""
    import polars as pl

    rep.run = name
    for f in rep.findings:
        f.run = name
    if rep.frame is not None and "run" in rep.frame.columns:
        rep.frame = rep.frame.with_columns(pl.lit(name, dtype=rep.frame.schema["run"]).alias("run"))


def rename_runs(runs: list) -> list:
    """discover.Runs with their final names (frames relabelled)."""
    import polars as pl

    out = []
    for run, name in zip(runs, name_runs(runs, name_of=lambda r: r.name)):
        if run.name != name:
            run = replace(run, name=name, frame=run.frame.with_columns(
                pl.lit(name, dtype=run.frame.schema["run"]).alias("run")))
        out.append(run)
    return out
