"""Walk the paths a user gave, pick an importer for each file, group sources into runs.

Nothing here parses a format: importers claim files by name and first bytes; this
module decides what is one run and in which order its launches (segments) came.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

import numpy as np
import polars as pl

from . import diagnostics, launchfiles, splitfiles, storage
from .errors import FormatError, InputError, NothingFound, SpikelensError
from .frame import SCHEMA, concat, conform, seq_dtype
from .groupindex import SourceGroups
from .importers.base import Importer, Table, read_head
from .importers.plans import sibling_plan
from .naming import key_name
from .sanitize import shown
from .segments import RECORD_ORDER, relogs_a_step, restart_record_order, split_ids, with_declared

if TYPE_CHECKING:
    from .importers.registry import Importers

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", "node_modules", ".ipynb_checkpoints"}


@dataclass
class Source:
    """One file or run folder, and the importer that will read it."""

    path: Path
    importer: Importer
    group: str


@dataclass
class Run:
    """One run: its frame (long schema, segments numbered) and what it came from."""

    name: str
    frame: pl.DataFrame
    sources: list[str]
    formats: list[str]
    segments: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)


def importers() -> Importers:
    from .importers.registry import IMPORTERS

    return IMPORTERS


def _claim(path: Path, is_dir: bool) -> Importer | None:
    head = b"" if is_dir else read_head(path)
    for imp in importers().claimants(folders=is_dir):  # the others are not imported for this
        try:
            if imp.claims(path, head):
                return imp
        except OSError:
            return None
    return None


def find_sources(paths: Iterable[str | os.PathLike]) -> list[Source]:
    """Every readable source under the paths, in a stable order; symlinked folders are
    not followed twice (W&B's `latest-run` points at a run already walked). All held: a
    sweep's discovery (`source_groups`) keeps them on disk past a few thousand."""
    found: list[Source] = []
    seen: set[Path] = set()

    def add(source: Source, real: Path) -> None:
        found.append(source)
        seen.add(real)

    _find(paths, seen.__contains__, add)
    return found


def _find(paths: Iterable[str | os.PathLike], seen: Callable[[Path], bool],
          add: Callable[[Source, Path], None]) -> None:
    """Walk the paths; each readable source not `seen` (by resolved path) is `add`ed in walk order."""
    for raw in paths:
        root = storage.localize(raw)  # an object-storage URL is copied, an MLflow URI pointed to
        if not root.exists():
            raise InputError(root, "no such file or folder")
        for path, is_dir in _walk(root):
            real = path.resolve()
            if seen(real):
                continue
            imp = _claim(path, is_dir)
            if imp is None and not is_dir and path == root:
                imp = _claim_named(path)
            if imp is None:
                if not is_dir:
                    _note_crashed_text(path) or _note_passed_over(path)
                continue
            group = imp.group_key(path)
            add(Source(path, imp, group if is_dir else splitfiles.family_key(path, launchfiles.family_key(path, group))),
                real)


def _claim_named(path: Path) -> Importer | None:
    """A file the user named on its own, whatever its extension (`log_cifar10.md`, `train.stdout`):
    the readers that judge a file by its content alone (`claims_named`) get a say. A folder's
    walk does not do this, so a repository's README is never taken for a log."""
    head = read_head(path)
    for imp in importers():
        named = getattr(imp, "claims_named", None)
        try:
            if named is not None and named(path, head):
                return imp
        except OSError:
            return None
    return None


CRASH_SUFFIXES = (".log", ".out", ".err")


def _note_crashed_text(path: Path) -> bool:
    """A console log no reader claims that holds NUL bytes is what a job killed before its
    first logged step leaves (the zero-filled tail of a crash): named, so that `check`
    does not pass over it. Whether it was."""
    if path.suffix.lower() not in CRASH_SUFFIXES:
        return False
    from .importers.decoding import looks_binary

    head = read_head(path)
    if b"\x00" in head and (not looks_binary(head) or not head.strip(b"\x00")):  # all zeros: nothing got written
        diagnostics.warn(f"{path}: a text log with NUL bytes (what a crash while writing leaves) and no line "
                         f"any reader knows — {NOTHING_READ}")
        return True
    return False


def _note_passed_over(path: Path) -> None:
    """A console log (`.log`, `.out`, `.err`) no reader claims whose lines hold numbers (ten or
    more, though banners and prose outnumber them) is named with which lines held numbers and why
    none was read, so a user can write a pattern: a log is never passed over in silence. Not a
    NOTHING_READ line: a folder's other logs were read, and a stray log does not fail `check`."""
    if path.suffix.lower() not in CRASH_SUFFIXES:
        return
    from .importers.textlogs import general_sniff

    try:
        verdict = general_sniff(path, named=True)
    except Exception:  # noqa: BLE001 - a note about a file nobody reads never fails the discovery
        return
    if verdict is not None and not verdict.readable and verdict.reason:
        diagnostics.warn(f"{path}: passed over, not read as a log: {verdict.reason} "
                         f"(a [tool.spikelens.patterns] entry reads lines a reader does not know)")


def _walk(root: Path) -> Iterator[tuple[Path, bool]]:
    """Yield (path, is_dir) depth first, sorted; a folder claimed by a folder importer
    is yielded and not descended into."""
    if root.is_file():
        yield root, False
        return
    if _claim(root, True) is not None:
        yield root, True
        return
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as exc:
        diagnostics.warn(f"{root}: cannot list folder ({exc.strerror or exc})")
        return
    for entry in entries:
        p = Path(entry.path)
        try:
            if entry.is_dir():
                if entry.name in SKIP_DIRS or (entry.is_symlink() and p.resolve() in {root.resolve()}):
                    continue
                yield from _walk(p)
            elif entry.is_file():
                yield p, False
        except OSError:
            continue


def _near_misses(roots: list[Path]) -> str:
    """For one file given by name: the readers its name or extension points to, and what they want."""
    if len(roots) != 1 or not Path(roots[0]).is_file():
        return ""
    path = Path(roots[0])
    near = [f"{name}: {what}" for name, what in readers()
            if path.name in what or (path.suffix and f"*{path.suffix}" in what)]
    return f"; a file like this is read by {' or by '.join(near[:2])}" if near else ""


def readers() -> list[tuple[str, str]]:
    """Each reader once, in the order they are tried: its name and what it looks for."""
    seen: dict[str, str] = {}
    for imp in importers():
        seen.setdefault(imp.name, imp.looks_for)
    return list(seen.items())


def groups(sources: list[Source]) -> list[list[Source]]:
    """Sources read together (one run or several that share files), in first-seen order."""
    by_key: dict[str, list[Source]] = {}
    for s in sources:
        by_key.setdefault(s.group, []).append(s)
    return list(by_key.values())


def read_group(group: list[Source], roots: list[Path]) -> list[Run]:
    """Read one group of sources and assemble its runs."""
    tables: list[Table] = []
    by_importer: dict[int, tuple[Importer, list[Path]]] = {}
    for src in group:
        by_importer.setdefault(id(src.importer), (src.importer, []))[1].append(src.path)
    with diagnostics.collecting() as said:
        _read_tables(by_importer, roots, tables)
    missing = unread([src.path for src in group], tables, said.lines)
    for where in list(missing):  # a log that gave nothing but ends in an error: a run that crashed before logging
        crashed = crash_table(Path(where))
        if crashed is not None:
            tables.append(crashed)
            del missing[where]
    report_lines(said.lines, missing)
    return assemble(launchfiles.join(splitfiles.join(tables, group[0].group), group[0].group), roots)


def crash_table(path: Path) -> Table | None:
    """An empty table for a text log that holds no value and ends in an error (see
    `textsignals.tail_error`): its run is reported as crashed before logging (SL306)."""
    from .importers.textsignals import tail_error

    if not path.is_file():
        return None
    found = tail_error(path)
    if found is None:
        return None
    return Table(frame=pl.DataFrame(schema=SCHEMA), source=path, format="text", run_key=str(path),
                 segment_key=str(path), meta={"plan.error": found[0], "plan.error_line_no": found[1]})


NOTHING_READ = "nothing was read from it"
"""Ends the warning that names a found log which gave no points (`coverage.unread` finds them)."""


def unread(paths: list[Path], tables: list[Table], said: list[str]) -> dict[str, list[str]]:
    """The found logs that gave no points, each with the warnings that say why: one that
    failed or was warned about, or any whose group gave nothing at all (a header-only CSV,
    a cut trainer_state.json, a log that crashed before its first step). An empty launch
    beside launches with data, with nothing wrong said about it, is the timeline's business."""
    read = [str(t.source) for t in tables if t.frame.height]
    out: dict[str, list[str]] = {}
    for path in paths:
        where = str(path)
        if any(r == where or r.startswith(where.rstrip("/") + "/") for r in read):
            continue
        why = [line for line in said if where in line or storage.display(where) in line]
        if why or not read:
            out[where] = why
    return out


def report_lines(said: list[str], missing: dict[str, list[str]]) -> None:
    """Pass the group's warnings on; those about a log that gave nothing become one line
    per log, ending with NOTHING_READ."""
    owner = {line: where for where, lines in missing.items() for line in lines}
    done: set[str] = set()
    for line in said:
        where = owner.get(line)
        if where is None:
            diagnostics.warn(line)
        elif where not in done:
            done.add(where)
            diagnostics.warn(f"{'; '.join(missing[where])} — {NOTHING_READ}")
    for where, lines in missing.items():
        if not lines:
            diagnostics.warn(f"{where}: no data points — {NOTHING_READ}")


def _read_tables(by_importer: dict[int, tuple[Importer, list[Path]]], roots: list[Path],
                 tables: list[Table]) -> None:
    for imp, paths in by_importer.values():
        try:
            try:
                tables.extend(imp.read_many(paths))
            except SpikelensError:
                raise
            except Exception as exc:  # noqa: BLE001 - an importer bug must not become a traceback
                where = paths[0] if len(paths) == 1 else paths[0].parent
                raise FormatError(where, f"the {imp.name} importer could not read it "
                                         f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from exc
        except FormatError as exc:
            # a file the user named is an error; one found by walking a folder is skipped
            named = {p.resolve() for p in paths} & {storage.localize(r).resolve() for r in roots}
            if named and not any(crash_table(p) is not None for p in paths):  # a crash's log: read_group says so
                raise
            diagnostics.warn(f"{exc} (skipped)")


def assemble(tables: list[Table], roots: list[Path]) -> list[Run]:
    """Group tables into runs by run key, order their segments, build each run's frame."""
    by_run: dict[str, list[Table]] = {}
    for t in tables:
        by_run.setdefault(t.run_key, []).append(t)
    runs = []
    for key, ts in by_run.items():
        ts.sort(key=lambda t: (t.order, str(t.source)))
        name = next((t.run_name for t in ts if t.run_name), None) or key_name(key)
        runs.append(_build_run(name, ts))
    return runs


def _build_run(name: str, tables: list[Table]) -> Run:
    parts: list[pl.DataFrame] = []
    by_segment: dict[int, dict] = {}
    seg_of_key: dict[str, int] = {}
    next_segment = 0
    seq0 = 0
    meta: dict = {}
    name = shown(name, newlines=False)  # names and metrics read from files reach every output: made printable
    local_sources = [t.source for t in tables if t.frame.height]
    tables = [replace(t, source=shown(storage.display(t.source), newlines=False), frame=printable_metrics(t.frame))
              for t in tables]  # a remote copy's files: URLs
    with_data = {t.segment_key for t in tables if t.frame.height}
    seq_type = seq_dtype(sum(t.frame.height for t in tables))  # 4 bytes a row up to 2^32 rows (frame.NARROW)
    if not with_data:  # no launch logged a value: what the tables say (a crash before logging) is the run's
        meta.update({k: shown(v) if isinstance(v, str) else v for t in tables for k, v in t.meta.items()})
    for t in tables:
        if t.frame.height == 0:
            if with_data and t.segment_key not in with_data and t.segment_key not in seg_of_key:
                # a launch that logged nothing: a segment with 0 points, in launch order
                seg_of_key[t.segment_key] = next_segment
                by_segment[next_segment] = empty_segment(next_segment, str(t.source), t.start_time)
                next_segment += 1
            continue
        meta.update({k: shown(v) if isinstance(v, str) else v for k, v in t.meta.items()})  # log text: printable
        base = seg_of_key.get(t.segment_key)
        if base is None:
            base = seg_of_key[t.segment_key] = next_segment
            next_segment += 1
        if t.meta:  # per launch (a W&B branch_point, TB purge steps) for the stitcher
            meta.setdefault("segment_meta", {}).setdefault(base, {}).update(t.meta)
        if t.meta.get("step.from") in RECORD_ORDER:  # a record count: a second training shows in its counter
            t = replace(t, frame=restart_record_order(t.frame, t.meta["step.from"]))
        local = split_ids(t.frame)
        if local is not None and not relogs_a_step(t.frame):
            # the step goes back but no step is ever logged twice: rows out of order (merged
            # or async writers), not relaunches, which re-log the steps after their checkpoint
            diagnostics.warn(f"{t.source}: rows are not in step order ({int(local.max())} step decreases, "
                             f"no step logged twice): read as one launch, sorted by step")
            t = replace(t, frame=t.frame.sort("step", maintain_order=True))
            local = None
        local = with_declared(local, t.meta.get("launch_offsets"), t.frame.get_column("step").to_numpy())
        if local is None:  # one launch: a constant column costs no memory per row
            segment = pl.lit(base, dtype=pl.UInt32)
        else:  # launches found inside the table (its step went back) get numbers after the base
            segment = pl.Series(np.where(local == 0, base, next_segment + local - 1), dtype=pl.UInt32)
            next_segment += int(local.max())
        f = t.frame.with_columns(
            run=pl.lit(name, dtype=SCHEMA["run"]),
            source=pl.lit(str(t.source), dtype=SCHEMA["source"]),
            segment=segment,
            seq=pl.int_range(seq0, seq0 + t.frame.height, dtype=seq_type),
        )
        seq0 += t.frame.height
        f = conform(f)
        parts.append(f)
        for row in segment_rows(f, base if local is None else None, str(t.source)):
            if local is None and t.start_time is not None:
                row["start_time"] = t.start_time  # tells a writer beside this launch from a later empty one
            _merge_segment(by_segment, row)
    frame = concat(parts) if parts else pl.DataFrame(schema=SCHEMA)  # a Float32 file beside a Float64 one: Float64
    segments = [by_segment[k] for k in sorted(by_segment)]
    if parts and not any(k in meta for k in ("plan.steps", "plan.epochs", "hf.max_steps")):
        meta.update(sibling_plan(Path(str(t)).parent for t in local_sources))  # `epochs` in a config beside the logs
    return Run(
        name=name,
        frame=frame,
        sources=sorted({str(t.source) for t in tables}),
        formats=sorted({t.format for t in tables}),
        segments=segments,
        meta=meta,
    )


def printable_metrics(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame with control characters and escapes taken out of its metric names (a
    name that is all escapes keeps a placeholder); the frame itself when none has any."""
    if frame.height == 0 or "metric" not in frame.columns:
        return frame
    names = frame.get_column("metric").unique().cast(pl.String).to_list()
    fixed = {n: (shown(n, newlines=False) or "?") for n in names if n is not None}
    fixed = {a: b for a, b in fixed.items() if a != b}
    if not fixed:
        return frame
    dtype = frame.schema["metric"]
    return frame.with_columns(pl.col("metric").cast(pl.String).replace(fixed).cast(dtype))


def empty_segment(segment: int, source: str, start_time: float | None) -> dict:
    """The timeline row of a launch that logged nothing: its source and, where the
    format gives one, its start time."""
    return {"segment": segment, "source": source, "first_step": None, "last_step": None,
            "first_wall_time": start_time, "last_wall_time": None, "points": 0}


def segment_rows(f: pl.DataFrame, segment: int | None, source: str) -> list[dict]:
    """Source, first/last step and wall time, and points of each segment in one table's
    rows; a table that is one segment is summarised from its columns (no group-by)."""
    if segment is not None:
        step, wall = f.get_column("step"), f.get_column("wall_time")
        return [{"segment": segment, "source": source, "first_step": step.min(), "last_step": step.max(),
                 "first_wall_time": wall.min(), "last_wall_time": wall.max(), "points": f.height}]
    return (
        f.group_by("segment", maintain_order=True)
        .agg(pl.col("source").first(), pl.col("step").min().alias("first_step"),
             pl.col("step").max().alias("last_step"), pl.col("wall_time").min().alias("first_wall_time"),
             pl.col("wall_time").max().alias("last_wall_time"), pl.len().alias("points"))
        .to_dicts()
    )


def _merge_segment(by_segment: dict[int, dict], row: dict) -> None:
    """Fold one table's summary of a segment into the run's (a launch may span tables)."""
    have = by_segment.get(row["segment"])
    if have is None:
        by_segment[row["segment"]] = row
        return

    def pick(fn, a, b):
        return b if a is None else a if b is None else fn(a, b)

    have["first_step"] = pick(min, have["first_step"], row["first_step"])
    have["last_step"] = pick(max, have["last_step"], row["last_step"])
    have["first_wall_time"] = pick(min, have["first_wall_time"], row["first_wall_time"])
    have["last_wall_time"] = pick(max, have["last_wall_time"], row["last_wall_time"])
    have["points"] += row["points"]
    if row.get("start_time") is not None:
        have["start_time"] = min(have.get("start_time") or row["start_time"], row["start_time"])


def source_groups(roots: list[Path], spool: Path | None = None) -> SourceGroups:
    """The groups of sources under the roots, in first-seen order (`groups`'s), kept on
    disk past `groupindex.SPILL` sources (in a private folder inside `spool`, else in
    `SPIKELENS_SPOOL_DIR` or the system's temporary folder: `close()` removes it); NothingFound
    (naming the formats looked for) when there is nothing readable."""
    found = SourceGroups(_spool_dir(spool, roots))
    try:
        _find(roots, found.seen, found.add)
        if not found:
            for source in _crashed_logs(roots):
                found.add(source, source.path)
        if not found:
            where = ", ".join(storage.safe_url(storage.unmangle(str(r))) for r in roots)
            raise NothingFound(where, f"no training logs found{_passed_over(roots)}{_near_misses(roots)} "
                                      f"(spikelens ls --formats lists what each reader looks for)")
        return found.finish()
    except BaseException:  # an error, Ctrl-C: an on-disk index goes now
        found.close()
        raise


def _spool_dir(spool: Path | None, roots: list[Path]) -> Path | None:
    """The folder a discovery's on-disk index is made in (a private folder inside it), made
    while the walk goes on: `SPIKELENS_SPOOL_DIR`, the caller's folder, the system's temporary
    one, the first that is not among the logs walked (nor beside a log file named); None (held
    in memory) when none is."""
    import tempfile

    from .outputs import refuse_overlap
    from .pipeline.spool import PREFIX

    named = os.environ.get("SPIKELENS_SPOOL_DIR")
    for folder in (Path(named) if named else None, spool, Path(tempfile.gettempdir())):
        if folder is None:
            continue
        try:
            refuse_overlap(folder / PREFIX, roots, "the spool", near_files=True)
        except SpikelensError:
            continue
        return folder
    return None


PASSED_OVER_SHOWN = 3
"""Files named with their reason in a folder's "no training logs found" before the rest are counted."""


def _passed_over(roots: list[Path]) -> str:
    """Why the files that may have been meant as logs were not read: the one file named, or
    the first few log-like files (`passedover.looks_loglike`) under the folders given."""
    from . import passedover

    local = [storage.localize(r) for r in roots]
    if len(local) == 1 and local[0].is_file():
        return f": {passedover.reason(local[0])}"
    files = [p for root in local if root.is_dir() for p, is_dir in _walk(root)
             if not is_dir and passedover.looks_loglike(p)]
    if not files:
        return ""
    shown_files = "; ".join(f"{shown(str(p))}: {passedover.reason(p)}" for p in files[:PASSED_OVER_SHOWN])
    more = f"; and {len(files) - PASSED_OVER_SHOWN} more" if len(files) > PASSED_OVER_SHOWN else ""
    return f": {len(files)} file{'s' if len(files) != 1 else ''} looked at ({shown_files}{more})"


class _CrashOnly(Importer):
    """A text log no reader claims that ends in an error (`crash_table`): a job that died
    before its first logged line of numbers."""
    name = "text"
    looks_for = "a text log ending in an error"

    def claims(self, path: Path, head: bytes) -> bool:
        return False

    def read(self, path: Path) -> list[Table]:
        table = crash_table(path)
        return [table] if table is not None else []


def _crashed_logs(roots: list[Path]) -> list[Source]:
    """When nothing under the roots is a known log: the files named, and the console logs
    (CRASH_SUFFIXES) found, whose text ends in an error. Only then, so that a folder with
    readable logs never gets an extra run from a stray error file."""
    imp = _CrashOnly()
    found = []
    for raw in roots:
        root = storage.localize(raw)
        for path, is_dir in (_walk(root) if root.exists() else ()):
            if is_dir or (path != root and path.suffix.lower() not in CRASH_SUFFIXES):
                continue
            if crash_table(path) is not None:
                found.append(Source(path, imp, str(path)))
    return found


def iter_runs(paths: Iterable[str | os.PathLike]) -> Iterator[Run]:
    """Runs under the paths, one group at a time (memory holds one group)."""
    roots = [Path(p) for p in paths]
    found = source_groups(roots)
    try:
        for group in found:
            yield from read_group(group, roots)
    finally:
        found.close()
