"""CSV training logs: generic wide or long CSVs, Lightning `CSVLogger`, Keras `CSVLogger`.

Every cell is read as text (`infer_schema=False`) and cast with `to_float`, so every
NaN/Inf spelling survives and `NA`/empty mean "not logged". The step column is found
by name (`STEP_NAMES`, in that preference) or, failing that, is the row index (with a
warning). Columns whose cells are mostly not numbers (`phase=decay`, Keras `"[1, 2]"`)
stay out of the frame. Rows keep their read order, so a file appended after a resume
becomes a second segment where its step goes back (`segments.py`).

Layouts:

- Lightning `<exp>/version_N/metrics.csv`: sparse rows, several per step. The
  experiment folder is the run and each `version_N` one of its segments, ordered by N.
- Keras `training.log` / `*.csv`: `epoch` first; `NA` for missing keys; an
  append-resume keeps the old header, so rows may be shorter (ragged) than it.
- Generic: any NaN spelling, `;`/tab separators with decimal commas, header lines
  repeated inside concatenated files, a `step, metric, value` long layout.

Damage policy (the same in every case): a file with nothing to read (empty, header
only) gives a warning and no points; a `.csv` that is not text at all (binary) raises
`FormatError`; damage inside a readable file (bad bytes, ragged or cut rows, text in a
numeric column, a line with NUL bytes or broken quoting, an unreadable step cell) gives
one warning per kind and keeps every readable value. Binary means control bytes are a
substantial share of the head, so one stray NUL does not cost the whole file.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from .. import diagnostics
from ..naming import key_name
from ..errors import FormatError, InputError
from . import decoding, rankcolumn
from .base import TABLE_SCHEMA, Importer, Table, non_numeric, to_float
from . import ledger
from .scalarreprs import unwrap_expr
from .plans import hparams_plan

if TYPE_CHECKING:
    import numpy as np

STEP_NAMES = ("step", "global_step", "iteration", "iter", "_step", "trainer/global_step", "train/global_step",
              "train/step", "steps", "iterations", "num_updates", "updates", "update", "epoch",
              "episode", "round", "generation")
"""Step columns by preference; `epoch` is the last resort (Keras logs per epoch), then the loop's own
count where a script counts no step nor epoch: an RL script's `Episode`, a federated or boosting
`Round`, an evolutionary `Generation` (a row a pass of the loop, numbered by it)."""
_EPOCH_WORDS = {"id", "idx", "num", "no", "number", "index"}
"""`epoch_id`, `epoch_num`: the epoch, named with what it is (a number)."""
SPLIT_WORDS = frozenset({"train", "training", "val", "valid", "validation", "eval", "evaluation", "test", "dev"})
"""Values of a column that says which data a row was measured on (`phase`, `split`, `mode`)."""
_TRAIN_WORDS = frozenset({"train", "training"})
_STEP_WORDS = {"step", "steps", "iter", "iters", "iteration", "iterations", "it", "itr", "update", "updates",
               "timestep", "timesteps"}
_NOT_STEP_WORDS = {"per", "sec", "second", "seconds", "s", "time", "rate", "lr", "size", "ms", "loss"}
"""A column named with a step word and none of these is a step column (`train_step`, not
`steps_per_second` or `step_time`)."""
WALL_NAMES = ("wall_time", "walltime", "wall-time", "wall time", "timestamp", "_timestamp", "time")
LONG_NAME_COLUMNS = ("metric", "tag", "name", "key", "metricname", "metric_name")
LONG_VALUE_COLUMNS = ("value", "metricvalue", "metric_value")
"""A long table's value column: `value`, Comet's `get_metrics()` rows (`metricName`, `metricValue`)."""


def bare_name(column: str) -> str:
    """A column's name without case or punctuation: Aim's `metric.name`, `Metric Name` and
    `metric_name` are one long table's name column."""
    return re.sub(r"[^a-z0-9]", "", column.lower())


PANDAS_INDEX_COLUMNS = ("column_0", "unnamed: 0")
"""An unnamed first column is the index `DataFrame.to_csv` writes by default."""
CSV_SUFFIXES = frozenset({".csv", ".tsv"})
KERAS_SUFFIXES = frozenset({".log", ".txt", ".out"})
RUNS_TABLE_COLUMNS = frozenset({"state", "notes", "user", "tags", "created", "runtime", "sweep", "id", "group"})
"""Columns of a W&B/MLflow runs-table export (one row per run, not a training log)."""
_METRIC_HINT = re.compile(r"loss|acc|lr|learning|grad|norm|perplex|ppl|f1|score|reward|return|fitness|error|mae|mse", re.I)
_VERSION_DIR = re.compile(r"^version_(\d+)$")
_NUMBERISH = re.compile(r"^\s*\"?\s*(?:[-+]?(?:\d|\.\d)|[-+]?(?:nan|inf))", re.I)


# ------------------------------------------------------------------ text and header


def decode(path: Path, raw: bytes) -> str:
    """UTF-8 text of a file (BOM dropped, UTF-16 decoded); bad bytes become U+FFFD with one
    warning (`decoding`). NULs stay: `read_string_frame` skips the lines holding them."""
    return decoding.decode_file(path, raw, keep_nuls=True)


looks_binary = decoding.looks_binary
"""A stray NUL, a run of zeros that a crash while appending leaves, or garbage after the
text does not make a text file binary: `read_string_frame` skips what it cannot read."""


def separator_of(header_line: str) -> str:
    """`,` unless the header clearly uses tabs, semicolons or pipes instead (`step|loss|acc`, as
    `df.to_csv(sep='|')` writes it; not a Markdown table's row, which the pipes also wrap)."""
    counts = {sep: header_line.count(sep) for sep in (",", "\t", ";", "|")}
    if header_line.strip().startswith("|") or header_line.strip().endswith("|"):
        counts["|"] = 0
    best = max(counts, key=lambda s: counts[s])
    return best if counts[best] and counts[","] == 0 else ","


def split_fields(line: str, sep: str) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=sep), [])
    except csv.Error:
        return line.split(sep)


def first_lines(head: bytes, n: int = 2) -> list[str]:
    """The first `n` non-blank lines of a file head (BOM dropped, bad bytes replaced)."""
    text = decoding.text_head(head)
    lines = [ln for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if ln.strip()]
    return lines[:n]


LONG_HEADER_BYTES = 1 << 20


def head_lines(path: Path, head: bytes, n: int = 2) -> list[str]:
    """Like `first_lines`, but a header longer than the 4 KiB head (hundreds of metric
    columns) is read on, up to 1 MiB, so claims see the whole of it."""
    if b"\n" not in head and len(head) >= 4096:
        try:
            with open(path, "rb") as fh:
                head = fh.read(LONG_HEADER_BYTES)
        except OSError:
            pass
    return first_lines(head, n)


def is_numberish(cell: str) -> bool:
    return bool(_NUMBERISH.match(cell))


_NUMBER = re.compile(r"\s*\"?\s*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf))\s*\"?\s*")


def is_number(cell: str) -> bool:
    """The whole cell is a number (`2d_loss`, `3d_loss` lead with a digit and are names)."""
    return bool(_NUMBER.fullmatch(cell))


PREAMBLE_LINES = 64
"""Lines looked at for a header below a preamble."""


def header_index(lines: list[str]) -> int:
    """Which of a file's first non-blank lines is its header: the first, unless lines of fewer fields
    come before it (a script's settings written as `name,value` rows, then a blank row, before its
    `DictWriter` header): then the first line of names wider than every line above it whose next two
    lines are rows of as many fields, mostly numbers."""
    if len(lines) < 4:
        return 0
    lead = next((i for i, ln in enumerate(lines) if not COMMENT_LINE.match(ln)), len(lines))
    if 0 < lead <= len(lines) - 2 and _names_over_row(lines[lead], lines[lead + 1]):
        return lead  # `# run 3, lr=1e-3` lines a script wrote over its header: comments, not rows
    sep = separator_of(lines[0])
    widths = [len(split_fields(ln, sep)) for ln in lines[:PREAMBLE_LINES]]
    first, second = split_fields(lines[0], sep), split_fields(lines[1], sep)
    if not any(map(is_numberish, first)) and len(second) == len(first) and mostly_numbers(second):
        return 0  # a header of names over a row of numbers: the file starts with its header
    for i in range(1, len(widths) - 2):
        fields = split_fields(lines[i], sep)
        if widths[i] <= max(widths[:i]) or widths[i] < 2 or any(is_numberish(f) for f in fields):
            continue
        rows = [split_fields(ln, sep) for ln in lines[i + 1:i + 3]]
        if all(len(r) == widths[i] and sum(map(is_numberish, r)) * 2 > len(r) for r in rows):
            return i
        return 0
    return 0


COMMENT_LINE = re.compile(r"\s*(?:#|//|%)")
"""A comment line (`#`, `//`, `%`) a script or a tool writes over its table."""


def _names_over_row(header: str, row: str) -> bool:
    """A line of names over a row of as many fields, mostly numbers (or one or two more that are empty: the
    doubled separator `_spare_fields` leaves out)."""
    sep = separator_of(header)
    names, cells = split_fields(header, sep), split_fields(row, sep)
    extra = len(cells) - len(names)
    fits = extra == 0 or (0 < extra <= 2 and sum(not c.strip() for c in cells) >= extra)
    return len(names) >= 2 and not any(map(is_numberish, names)) and fits and mostly_numbers(cells)


def mostly_numbers(cells: list[str]) -> bool:
    """A row of numbers: most of its filled cells are numbers (Lightning's CSVLogger leaves the metrics a
    row did not log empty, `0,9,,,1.67,,`)."""
    filled = [c for c in cells if c.strip()]
    return bool(filled) and sum(map(is_numberish, filled)) * 2 > len(filled)


def step_column(columns: list[str]) -> str | None:
    """The step column by name preference (case-insensitive), else the first column named
    with a step word (`train_step`, `iter_num`; not `steps_per_second`), or None."""
    low = {c.strip().lower(): c for c in columns}
    for name in STEP_NAMES:
        if name in low and name != "epoch":
            return low[name]
    worded = _step_worded(low)  # `global step`, `train_step`, `iter_num`: named with a step word
    if worded is not None:
        return worded
    if "epoch" in low:  # a finer count named with a step word (`training_steps`) comes before the epoch
        return low["epoch"]
    return next((low[k] for k in sorted(low) if is_epoch_name(k)), None)  # `epoch_id`, `Epoch No`: the last resort


_PLAIN_STEP_WORDS = frozenset({"train", "training", "global", "total", "num", "n", "no", "number", "cur", "current",
                               "idx", "index", "opt", "optimizer", "trainer", "env"})
"""Words beside a step word that leave it the loop's count (`global_step`, `n_iter`, `total_timesteps`)."""
_NUMBERED = re.compile(r"^(.*?)[_\-: #]?\d+$")


def _step_worded(low: dict[str, str]) -> str | None:
    """The column named with a step word (and no rate or time word: not `steps_per_second`), the same
    whatever the columns' order (#24): the fewest other words first (`train_step` before
    `update_data_count`), then the shortest name, then the name. A member of a numbered set
    (`update_batch_count_group:0` .. `:3`: one count per group) counts no step of the run."""
    stems = [m.group(1) for k in low if (m := _NUMBERED.match(k))]
    found = []
    for key, col in low.items():
        words = set(re.split(r"[^a-z]+", key)) - {""}
        if not words & _STEP_WORDS or words & _NOT_STEP_WORDS:
            continue
        numbered = _NUMBERED.match(key)
        if numbered and stems.count(numbered.group(1)) >= 2:
            continue
        found.append((len(words - _STEP_WORDS - _PLAIN_STEP_WORDS), len(key), key, col))
    return min(found)[3] if found else None


def is_epoch_name(name: str) -> bool:
    """`epoch`, `Epoch`, `epoch_id`, `epoch_num`: a column named as the epoch."""
    words = {"epoch" if w == "epochs" else w for w in re.split(r"[^a-z]+", name.strip().lower())} - {""}
    return "epoch" in words and words - {"epoch"} <= _EPOCH_WORDS


def split_of(values: list) -> bool:
    """Do a column's values say which data each row was measured on (`train`, `val`): two or more
    split names and nothing else?"""
    seen = {str(v).strip().lower() for v in values if v is not None and str(v).strip()}
    return len(seen) >= 2 and seen <= SPLIT_WORDS


def _split_column(col: pl.Series) -> bool:
    """A text column of split names (`phase`: `train`, `val`), looked at in its head first (a large
    column of other text is not gone over whole)."""
    head = col.head(2000).drop_nulls().str.strip_chars().str.to_lowercase().unique().to_list()
    if not head or not set(head) <= SPLIT_WORDS:
        return False
    return split_of(col.drop_nulls().unique().head(16).to_list())


def split_metric(split: str | None, metric: str) -> str:
    """A metric measured on a held-out split (`Loss` of a `val` row) named by it (`val/Loss`), as a
    person reads the row; a training row's, or a metric whose name says its split already
    (`val_loss`), keeps its name."""
    from ..frame import is_eval

    if split is None or split.strip().lower() in _TRAIN_WORDS or is_eval(metric):
        return metric
    return f"{split.strip()}/{metric}"


_SETTING_COLUMNS = frozenset({"dropout", "n_layers", "num_layers", "layers", "hidden", "hidden_size", "hidden_dim",
                              "optimizer", "batch size", "batch_size", "bs", "weight_decay", "wd", "momentum",
                              "n_estimators", "max_depth", "num_leaves", "seed", "activation", "n_epochs", "num_epochs",
                              "model_type"})
"""Columns that name a run's settings: a table holding several is one row a configuration."""


_RUN_KEYS = frozenset({"fold", "seed", "trial", "algo", "algorithm", "env", "env_id", "environment", "model",
                       "model_name", "version", "config", "experiment", "exp", "run", "run_id"})
"""Columns that tell runs apart (a fold, a seed, an algorithm on an environment)."""
_ENV_KEYS = frozenset({"algo", "algorithm", "env", "env_id", "environment"})
"""An agent on an environment: beside them `n_timesteps` is each run's budget, not a step."""
_SUMMARY = re.compile(r"^(?:best|final|last|n)_|_(?:best|final)$")


def _summarises_runs(low: set[str]) -> bool:
    """Columns that sum a whole run up: its best or final value (`best_val_loss`, `final_acc`), its
    totals (`n_timesteps`), or a value's mean beside its spread (`mean_reward`, `std_reward`)."""
    if any(_SUMMARY.search(f) for f in low):
        return True
    return any(f.replace("mean", "std") in low for f in low if "mean" in f)


def looks_like_runs_table(fields: list[str]) -> bool:
    """A table of runs, one row each (a W&B/MLflow runs export, an Optuna `trials_dataframe()`, a
    sweep's results with its settings as columns), not one run's curve: no step column and a run's
    name and bookkeeping, or trial parameters (`params_lr`), a search's ranked candidates
    (`mean_test_score`, `rank_test_score`), or two settings or more (`dropout`, `n_layers`, `optimizer`)."""
    low = {f.strip().lower() for f in fields}
    step = step_column(fields)
    total = step is not None and step.strip().lower().startswith("n_") and bool(low & _ENV_KEYS)  # a run's budget
    if (step is None or total) and low & _RUN_KEYS and _summarises_runs(low):
        return True  # `fold, best_epoch, best_val_loss`; `algo, env_id, mean_reward, std_reward, n_timesteps`
    if step is not None:
        return False
    if "name" in low and len(low & RUNS_TABLE_COLUMNS) >= 1:
        return True
    if {"mean_test_score", "rank_test_score"} <= low:
        return True  # scikit-learn's `cv_results_` (GridSearchCV): a row a candidate's settings
    return any(f.startswith("params_") for f in low) or len(low & _SETTING_COLUMNS) >= 2


# ------------------------------------------------------------------ reading text into a string frame


@dataclass
class CsvText:
    """A CSV file read as text: every cell a String, rows in read order."""

    frame: pl.DataFrame
    sep: str


def read_string_frame(path: Path, text: str) -> CsvText:
    """Parse CSV text into an all-String frame. Header lines repeated inside the file
    (concatenated logs) start a new block with its own header; ragged rows are kept
    (short ones padded with null, long ones cut) with one warning per kind. Lines with
    NUL bytes, and in a block polars cannot parse (bad quoting) the lines that are no
    CSV row, are skipped with a warning; every other row is kept."""
    norm = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    lines = pl.Series("text", [norm]).str.split("\n").explode()
    if "\x00" in norm:
        lines = _blank_nul_lines(path, lines)
        norm = lines.str.join("\n")[0]
    idx = pl.arg_where(lines.str.strip_chars().str.len_bytes() > 0, eager=True)
    if idx.len() == 0:
        return CsvText(pl.DataFrame(), ",")
    first, last = int(idx[0]), int(idx[-1])
    skipped = header_index([lines[int(i)] for i in idx.head(PREAMBLE_LINES)])
    if skipped:
        first = int(idx[skipped])
        diagnostics.warn(f"{path}: {skipped} line(s) before the header (comments or settings, not rows) skipped")
    header_line = lines[first]
    sep = separator_of(header_line)
    header = split_fields(header_line, sep)
    if _tab_padded(header_line, sep):  # `'\t,'.join(...)`: the tab is part of the separator, alone where a comma was lost
        lines = lines.str.replace_all(r"[ \t]*,[ \t]*", ",").str.strip_chars(" \t").str.replace_all(r"\t+", ",")
        header = [f.strip() for f in split_fields(lines[first], sep)]
        norm = lines.str.join("\n")[0]
    other = _rows_separator(lines, first, header, sep)
    if other is not None:  # `f.write('epoch,step,loss\n')` over `'\t'.join(...)` rows: the rows' own separator
        lines = lines.str.replace_all(other, sep, literal=True)
        norm = lines.str.join("\n")[0]
    spare = _spare_fields(lines, first, len(header), sep)
    if spare:  # Flair's `loss.tsv`: every row one empty field wider than its header
        diagnostics.warn(f"{path}: every row has {len(spare)} empty field(s) more than the header (at field "
                         f"{', '.join(str(i + 1) for i in spare)}); left out so the values stand under their names")
        lines = _drop_fields(lines, first, spare, sep)
        norm = lines.str.join("\n")[0]
    starts = [first] + _repeated_headers(lines, first, header, sep)
    if len(starts) > 1:
        diagnostics.warn(f"{path}: header repeated {len(starts) - 1} time(s) inside the file "
                         f"(first at line {starts[1] + 1}); read as concatenated logs")
    blocks = []
    short = long = 0
    first_bad = None
    damaged: list[int] = []  # line numbers (1-based) with broken quoting
    for b, start in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else lines.len()
        names = _unique_names(split_fields(lines[start], sep))
        body = lines.slice(start + 1, end - start - 1)
        if len(starts) == 1:  # the common case: the text after the header, no copy through lines
            data = norm[_offset_of_line(norm, start + 1):].encode()
        else:
            data = (body.str.join("\n")[0] if body.len() else "").encode()
        if not data.strip():
            continue
        try:
            block = pl.read_csv(data, has_header=False, separator=sep, schema={n: pl.String for n in names},
                                truncate_ragged_lines=True, quote_char='"')
            n_short, n_long, bad_at = _ragged(body, len(names), sep)
        except pl.exceptions.PolarsError:
            block, bad_rows, (n_short, n_long, bad_at) = _parse_rows(body, names, sep)
            damaged.extend(start + 2 + i for i in bad_rows)
        short += n_short
        long += n_long
        if bad_at is not None and first_bad is None:
            first_bad = start + 2 + bad_at
        blocks.append(block)
    cut_last = not text.endswith(("\n", "\r"))
    if damaged:
        cut = " — the last line looks cut short" if cut_last and damaged[-1] == last + 1 else ""
        diagnostics.warn(f"{path}: {len(damaged)} damaged line(s) with broken quoting (a cut inside a quoted "
                         f"field, a stray quote, bytes after a closing quote), first at line {damaged[0]}{cut}; "
                         "skipped unless their fields fit the header")
    if short or long:
        what = []
        if short:
            what.append(f"{short} row(s) with fewer fields than the header (padded as not logged)")
        if long:
            what.append(f"{long} row(s) with more fields than the header (extra fields dropped)")
        cut = " — the last line looks cut short" if short == 1 and first_bad == last + 1 and cut_last else ""
        diagnostics.warn(f"{path}: " + "; ".join(what) + f", first at line {first_bad}{cut}")
    if not blocks:
        return CsvText(pl.DataFrame(schema={n: pl.String for n in _unique_names(header)}), sep)
    frame = pl.concat(blocks, how="diagonal") if len(blocks) > 1 else blocks[0]
    return CsvText(frame, sep)


def _tab_padded(header_line: str, sep: str) -> bool:
    """A header whose every comma comes with a tab before it (`Step\t,episode.rwd\t,loss\t,time`, a
    `'\t,'.join(...)` writer): its rows' tabs separate too, even where the writer left out a comma."""
    return sep == "," and header_line.count(",") >= 2 and header_line.count("\t,") == header_line.count(",")


def _rows_separator(lines: pl.Series, first: int, header: list[str], sep: str) -> str | None:
    """The separator the rows use when it is not the header's: a header of names written with one (`,`) over
    rows that hold none of it but as many numbers apart by another (a tab); else None."""
    if len(header) < 2:
        return None
    rows = lines.slice(first + 1, 50).filter(lines.slice(first + 1, 50).str.strip_chars().str.len_bytes() > 0)
    rows = rows.filter(rows.str.strip_chars() != lines[first].strip())
    if rows.len() < 2 or bool(rows.str.contains(sep, literal=True).any()):
        return None
    for other in ("\t", ";", ","):
        if other != sep and other not in lines[first] and all(
                len(r.split(other)) == len(header) and all(is_numberish(c) for c in r.split(other))
                for r in rows.head(10).to_list()):
            return other
    return None


def _spare_fields(lines: pl.Series, first: int, n: int, sep: str) -> list[int]:
    """Where every row has the same one or two fields more than its header and those fields are empty in
    every row, their places (0-based): a doubled separator the writer printed on each row (old Flair's
    `loss.tsv`: `Metric.to_empty_tsv()` starts with a tab, so the `_` placeholders of the metrics it did not
    compute, and every value after them, sit one field right of their names), or a separator after every
    field (`f.write(f"{a}\\t{b}\\t")` under a header written without one). [] otherwise: a column added
    mid-run (its rows differ), or more empty fields than spare ones (which is spare is a guess)."""
    body = lines.slice(first + 1)
    body = body.filter(body.str.strip_chars().str.len_bytes() > 0)
    if n < 2 or body.len() < 2 or bool(body.str.contains('"', literal=True).any()):
        return []
    widths = body.str.count_matches(sep, literal=True) + 1
    k = int(widths.min()) - n
    if k not in (1, 2) or int(widths.max()) != n + k:
        return []
    cells = pl.DataFrame({"t": body}).select(pl.col("t").str.split_exact(sep, n + k - 1)).unnest("t")
    empty = [i for i, c in enumerate(cells.columns)
             if cells.select((pl.col(c).str.strip_chars().str.len_bytes() == 0).all()).item()]
    if k == 1 and n in empty:  # the separator after every field
        return [n]
    return empty if len(empty) == k else []


def _drop_fields(lines: pl.Series, first: int, places: list[int], sep: str) -> pl.Series:
    """The lines after the header with the fields at `places` left out (every such line has them)."""
    width = int(lines.slice(first + 1).str.count_matches(sep, literal=True).max()) + 1
    keep = [j for j in range(width) if j not in places]
    row = (pl.int_range(pl.len()) > first) & (pl.col("t").str.strip_chars().str.len_bytes() > 0)
    return pl.DataFrame({"t": lines}).select(
        pl.when(row).then(pl.col("t").str.split(sep).list.gather(keep, null_on_oob=True).list.join(sep))
        .otherwise(pl.col("t"))).to_series().rename(lines.name)


def _blank_nul_lines(path: Path, lines: pl.Series) -> pl.Series:
    """Lines holding NUL bytes (what a crash while appending leaves) become blank lines:
    their values are lost, line and row numbers stay. The header only loses its NULs."""
    has_nul = lines.str.contains("\x00", literal=True)
    cleaned = lines.str.replace_all("\x00", "", literal=True)
    filled = pl.arg_where(cleaned.str.strip_chars().str.len_bytes() > 0, eager=True)
    header_at = int(filled[0]) if filled.len() else -1
    blank = has_nul & (pl.int_range(lines.len(), eager=True) != header_at)
    at = pl.arg_where(blank, eager=True)
    if at.len():
        diagnostics.warn(f"{path}: {at.len()} line(s) with NUL bytes skipped, first at line {int(at[0]) + 1} "
                         "(a crash while writing leaves them)")
    if header_at >= 0 and has_nul[header_at]:
        diagnostics.warn(f"{path}: NUL bytes removed from the header (line {header_at + 1})")
    return cleaned.scatter(at, "") if at.len() else cleaned


def _parse_rows(body: pl.Series, names: list[str],
                sep: str) -> tuple[pl.DataFrame, list[int], tuple[int, int, int | None]]:
    """Rows of a block that polars cannot parse (a line cut inside a quoted field, a
    stray quote, a byte after a closing quote), each line read on its own by Python's
    `csv` so one damaged line cannot spoil the others. A line with broken quoting is
    kept only when its fields fit the header (else its values could land in the wrong
    columns); well-quoted ragged rows are padded or cut, as polars does. Returns the
    frame, the offsets of the damaged lines, and (short, long, first ragged offset)."""
    n = len(names)
    field = r'(?:"(?:[^"]|"")*"|[^"%s]*)' % re.escape(sep)
    well_quoted = re.compile(rf"{field}(?:{re.escape(sep)}{field})*")
    texts = body.to_list()
    if texts and texts[-1] == "":
        texts.pop()  # the end of the text after its last newline
    rows: list[list[str | None]] = []
    bad: list[int] = []
    short = long = 0
    first_ragged = None
    for i, line in enumerate(texts):
        try:
            fields = next(csv.reader([line], delimiter=sep, strict=True), [])
        except csv.Error:
            bad.append(i)
            continue
        if '"' in line and not well_quoted.fullmatch(line):
            bad.append(i)
            if len(fields) != n:
                continue
        elif line.strip() and len(fields) != n:
            short += len(fields) < n
            long += len(fields) > n
            first_ragged = i if first_ragged is None else first_ragged
        rows.append([f or None for f in fields[:n]] + [None] * (n - len(fields)))
    frame = pl.DataFrame(rows, schema={c: pl.String for c in names}, orient="row")
    return frame, bad, (short, long, first_ragged)


def _offset_of_line(text: str, n: int) -> int:
    """Character offset where line `n` (0-based) of `text` starts."""
    pos = 0
    for _ in range(n):
        nxt = text.find("\n", pos)
        if nxt < 0:
            return len(text)
        pos = nxt + 1
    return pos


def _unique_names(fields: list[str]) -> list[str]:
    out: list[str] = []
    seen: dict[str, int] = {}
    for i, f in enumerate(fields):
        name = f.strip() or f"column_{i}"
        if name in seen:
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 0
        out.append(name)
    return out


def _repeated_headers(lines: pl.Series, first: int, header: list[str], sep: str) -> list[int]:
    """Line numbers (after the first header) of lines that are headers again: no field
    looks like a number and they share a column name with the first header."""
    names = {h.strip() for h in header if h.strip()}
    if not names:
        return []
    candidates = (
        pl.DataFrame({"text": lines}).with_row_index("i")
        .filter(pl.col("i") > first, pl.col("text").str.contains_any(sorted(names)))
        .filter(~pl.col("text").str.contains(r"(?i)(?:^|[,;\t])\s*\"?\s*[-+]?(?:\d|\.\d|nan|inf)"))
    )
    out = []
    for i, text in candidates.iter_rows():
        fields = [f.strip() for f in split_fields(text, sep)]
        if len(fields) >= 2 and names & set(fields):
            out.append(int(i))
    return out


def _ragged(body: pl.Series, n_fields: int, sep: str) -> tuple[int, int, int | None]:
    """Rows with fewer / more fields than the header, and the first such row's offset."""
    if body.len() == 0:
        return 0, 0, None
    text = pl.col("t")
    if body.str.contains('"', literal=True).any():  # separators inside quotes do not count
        text = text.str.replace_all(r'"[^"]*"', "")
    counts = (
        pl.DataFrame({"t": body}).with_row_index("i")
        .with_columns(n=text.str.count_matches(sep, literal=True) + 1)
        .filter(pl.col("n") != n_fields, pl.col("t").str.strip_chars().str.len_bytes() > 0)
    )
    if counts.height == 0:
        return 0, 0, None
    short = int((counts["n"] < n_fields).sum())
    return short, counts.height - short, int(counts["i"][0])


# ------------------------------------------------------------------ string frame → long table


@dataclass
class Floats:
    """How to read one text column as numbers, and what its cells hold."""

    expr: pl.Expr
    numbers: int
    texts: int
    """Non-empty cells that are no number (nor a NaN/Inf/NA spelling)."""


_DAMAGED_CELL = "[\ufffd\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]"
"""A cell holding undecodable or control bytes is damage (garbage after the text, counted
by `decoding`), not a text value: it does not make a numeric column a text column. Not
ESC: `decoding` keeps an ESC that starts no terminal code and counts nothing, so such a
cell is counted here, as a stray text cell (else its value would be lost unsaid)."""


def float_columns(frame: pl.DataFrame, columns: list[str], sep: str) -> dict[str, Floats]:
    """Per column, the Float64 reading: a plain cast where it reads every filled cell
    (fast), `to_float` (every NaN/Inf/NA spelling) where it does not."""
    if not columns:
        return {}
    raw = {c: _cell(c, sep) for c in columns}
    probe = frame.select(
        *[raw[c].cast(pl.Float64, strict=False).is_not_null().sum().alias(f"ok:{c}") for c in columns],
        *[(raw[c].str.strip_chars().str.len_bytes() > 0).sum().alias(f"filled:{c}") for c in columns],
    ).row(0, named=True)
    out: dict[str, Floats] = {}
    slow = [c for c in columns if probe[f"ok:{c}"] != probe[f"filled:{c}"]]
    for c in slow:  # `tf.Tensor(0.53, shape=(), dtype=float32)`: a history of tensors written by `to_csv`
        raw[c] = unwrap_expr(raw[c])
    for c in columns:
        if c not in slow:
            out[c] = Floats(raw[c].cast(pl.Float64, strict=False), probe[f"ok:{c}"], 0)
    if slow:
        stats = frame.select(
            *[to_float(raw[c]).is_not_null().sum().alias(f"ok:{c}") for c in slow],
            *[(non_numeric(raw[c]) & ~raw[c].str.contains(_DAMAGED_CELL)).sum().alias(f"bad:{c}") for c in slow],
        ).row(0, named=True)
        for c in slow:
            out[c] = Floats(to_float(raw[c]), stats[f"ok:{c}"], stats[f"bad:{c}"])
    return out


def numeric_columns(path: Path, floats: dict[str, Floats]) -> list[str]:
    """Columns whose non-empty cells are mostly numbers; warn about stray text cells in them."""
    keep, stray = [], []
    for c, f in floats.items():
        if f.texts > f.numbers:
            continue  # a string-valued column (phase, tags, lists)
        keep.append(c)  # (a column never logged in this file drops out as nulls)
        if f.texts:
            stray.append(f"{c!r} ({f.texts})")
    if stray:
        diagnostics.warn(f"{path}: cells that are not numbers read as not logged in " + ", ".join(stray))
    return keep


def _cell(col: str, sep: str) -> pl.Expr:
    """A cell as text; with `;` or tab separators a decimal comma becomes a point."""
    expr = pl.col(col)
    if sep != ",":
        expr = expr.str.replace(r"^(\s*[-+]?\d*),(\d+(?:[eE][-+]?\d+)?\s*)$", "${1}.${2}")
    return expr


def wall_time_expr(frame: pl.DataFrame, col: str, sep: str) -> pl.Expr | None:
    """Seconds since the epoch from a time column (unix s or ms, or ISO datetimes); None
    when the column holds something else (seconds per step, relative runtime)."""
    num = float_columns(frame, [col], sep)[col]
    if num.numbers:
        values = frame.select(num.expr.alias("v")).get_column("v").drop_nulls().drop_nans()
        mid = float(values.median()) if values.len() else 0.0
        if 1e8 <= mid < 1e11:
            return num.expr
        if 1e11 <= mid < 1e14:
            return num.expr / 1000.0
        return None
    parsed = _datetime(pl.col(col))
    if (frame.select(parsed.is_not_null().mean()).item() or 0) > 0.5:
        return parsed
    return None


def _datetime(expr: pl.Expr) -> pl.Expr:
    return (expr.str.strip_chars().str.replace("T", " ", literal=True)
            .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="us")
            .dt.timestamp("us").cast(pl.Float64) / 1e6)


def to_long(path: Path, frame: pl.DataFrame, sep: str, *, step_col: str | None,
            wall_col: str | None = None, drop: tuple[str, ...] = ()) -> pl.DataFrame:
    """Wide string frame → long table (`step, wall_time, metric, value`) in read order.

    `step_col` None (or a step column that is mostly not whole numbers) numbers the rows
    instead, with a warning; rows whose step cell alone is unreadable are skipped, with
    a warning. Null cells are "not logged" and leave no row.
    """
    columns = frame.columns
    if wall_col not in columns:  # a damaged header can lose the named column
        wall_col = None
    if step_col not in columns:
        step_col = None
    wall = wall_time_expr(frame, wall_col, sep) if wall_col else None
    skip = {step_col, *drop, *(c for c in columns if c.strip().lower() in STEP_NAMES and c.strip().lower() != "epoch")}
    if wall is not None:
        skip.add(wall_col)
    floats = float_columns(frame, [c for c in columns if c not in skip or c == step_col], sep)
    metrics = numeric_columns(path, {c: f for c, f in floats.items() if c != step_col})
    step = _step_expr(path, frame, step_col, floats.get(step_col))
    counter = _batch_counter(frame, floats, step_col) if step is not None else None
    if counter is not None:  # `Epoch,Batch,...`: the batch count starts again each epoch
        step, metrics = counter[0], [c for c in metrics if c != counter[1]]
    if step is None:  # the step column could not be used; it may still be a metric
        if step_col is not None and step_col.strip().lower() == "epoch" and step_col not in metrics:
            metrics = [step_col] + metrics
        step = pl.int_range(pl.len(), dtype=pl.Int64)
    if not metrics:
        return pl.DataFrame(schema=TABLE_SCHEMA)
    k = len(metrics)
    split = next((c for c in columns if c not in metrics and c != step_col and c not in skip
                  and _split_column(frame.get_column(c))), None)
    naming = split_metric
    if split is None:  # `epoch,fold,loss` of folds run side by side: a run's number keys its rows, no metric
        split = _series_column(frame, [c for c in metrics if c.strip().lower() in RUN_NAMES], step)
        if split is not None:
            metrics, k = [c for c in metrics if c != split], k - 1
            naming = lambda item, m, key=split.strip(): _item_metric(f"{key}_{item.strip()}" if item else item, m)
    if split is None:  # `epoch,iter,loss,phase` with `ascent`/`descent` rows: a curve a phase (`descent/loss`)
        split = _tag_column(frame, [c for c in columns if c not in metrics and c != step_col and c not in skip])
        naming = split_metric
    if split is None:  # `epoch,class,precision`: a text column naming the item each row of a step measured
        split = _series_column(frame, [c for c in columns if c not in metrics and c != step_col and c not in skip], step)
        naming = _item_metric
    if not metrics:
        return pl.DataFrame(schema=TABLE_SCHEMA)
    long = (
        frame.select(
            row=pl.int_range(pl.len(), dtype=pl.UInt32),
            step=step,
            wall_time=wall if wall is not None else pl.lit(None, pl.Float64),
            value=pl.concat_list([floats[c].expr for c in metrics]),
            split=pl.col(split).str.strip_chars() if split is not None else pl.lit(None, pl.String),
        )
        .explode("value")
        .with_columns(metric=(pl.int_range(pl.len()) % k).replace_strict(list(range(k)), metrics, return_dtype=pl.String))
    )
    if split is not None:  # `Epoch,Phase,Loss`: a row a split; the held-out rows' metrics named by it
        pairs = long.select("split", "metric").unique().iter_rows()
        key = pl.concat_str([pl.col("split").fill_null(""), pl.col("metric")], separator="\x00")
        mapping = {f"{sp or ''}\x00{m}": naming(sp, m) for sp, m in pairs}
        long = long.with_columns(metric=key.replace_strict(mapping, return_dtype=pl.String))
    lost = long.filter(pl.col("step").is_null() & pl.col("value").is_not_null())
    if lost.height:
        _warn_stepless(path, step_col, lost["row"].n_unique(), lost.height)
    long = long.filter(pl.col("value").is_not_null() & pl.col("step").is_not_null())
    return long.select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])


_TAG_NAMES = frozenset({"phase", "stage", "mode", "split", "kind", "type", "objective", "task", "part", "losstype",
                        "term", "subset", "tag", "steptype"})
"""Names (`bare_name`s) of a column that says which phase or objective each row's values belong to."""
_TAG_WORD = r"^[A-Za-z][\w\-]{0,40}$"


def _tag_column(frame: pl.DataFrame, candidates: list[str]) -> str | None:
    """A column named as a phase (`phase`, `stage`, `mode`, ...) holding 2 to 16 words, each on several rows,
    that keep coming back in turn (`ascent`, `descent`, `contrastive` of an unlearning loop, a step each): the
    rows of each word are a curve of their own, as a person splits them (one series read across them flips
    between unrelated levels). Phases that follow each other once (a schedule's `warmup`, then `decay`) are
    stages of one curve. None where no such column is."""
    for c in candidates:
        if bare_name(c) not in _TAG_NAMES or frame.schema[c] != pl.String:
            continue
        words = frame.get_column(c).str.strip_chars().drop_nulls()
        counts = words.value_counts()
        changes = int((words != words.shift(1)).sum())
        if 2 <= counts.height <= 16 and bool(words.str.contains(_TAG_WORD).all()) and \
                int(counts.get_column("count").min()) >= 2 and changes >= 2 * counts.height:
            return c  # (phases that come back again and again; a schedule's `warmup` then `decay` is one curve)
    return None


MAX_ITEMS = 64
"""Items a step's rows may name (classes, images, environments) for their column to key the series."""


def _series_column(frame: pl.DataFrame, candidates: list[str], step: pl.Expr) -> str | None:
    """A text column that names what each row of a step measured (`class`, `image`, `env`): most steps
    hold several rows, the column holds 2 to `MAX_ITEMS` names, and no name repeats within a step.
    Each metric is then one curve an item, as a person reads such a long table; None where no
    column does so (a column of notes, a time stamp, or a table of one row a step)."""
    if not candidates or frame.height < 4:
        return None
    steps = frame.select(step.alias("s")).get_column("s")
    if steps.null_count() or steps.n_unique() * 2 > steps.len():
        return None
    for c in candidates:
        col = frame.get_column(c).cast(pl.String).str.strip_chars()
        if col.null_count() or not 2 <= col.n_unique() <= MAX_ITEMS:
            continue
        if pl.DataFrame({"s": steps, "v": col}).n_unique() == frame.height:
            return c
    return None


def _item_metric(item: str | None, metric: str) -> str:
    """A metric of one item of a long table (`image-001`) named by it (`image-001/loss`)."""
    return f"{item.strip()}/{metric}" if item and item.strip() else metric


def _warn_stepless(path: Path, step_col: str | None, rows: int, values: int) -> None:
    diagnostics.warn(f"{path}: {rows} row(s) without a readable {step_col!r} (empty, text or not a whole "
                     f"number) skipped, with {values} value(s)")


_BATCH_NAMES = ("batch", "batch_idx", "batch_id", "batch_num", "minibatch", "i")
"""Columns that count batches within an epoch (`csv.writer` rows of `epoch, batch, loss`)."""


def _batch_counter(frame: pl.DataFrame, floats: dict, step_col: str | None) -> tuple[pl.Expr, str] | None:
    """The step of an `epoch` column with a batch count beside it that starts again as each
    new epoch begins: (epoch - first epoch) * batches an epoch + batch, and that column's name.
    None when there is no such column, or it does not start again at every new epoch (a
    global count, or rows of one record per epoch)."""
    if step_col is None or not is_epoch_name(step_col):
        return None
    col = next((c for c in frame.columns if c.strip().lower() in _BATCH_NAMES and c in floats), None)
    if col is None:
        return None
    both = frame.select(e=floats[step_col].expr, b=floats[col].expr).drop_nulls()
    if both.height < 4 or not both.select((pl.col("b") == pl.col("b").floor()).all()).item():
        return None
    up, back = pl.col("e").diff() > 0, pl.col("b").diff() < 0
    ups, restarts = both.select(up.sum()).item(), both.select((up & back).sum()).item()
    if not ups or restarts != ups:
        return None
    b = both.get_column("b")
    per = int(b.max()) + (1 if int(b.min()) == 0 else 0)
    first = int(both.get_column("e").min())
    step = ((floats[step_col].expr - first) * per + floats[col].expr).cast(pl.Int64, strict=False)
    return step, col


def _step_expr(path: Path, frame: pl.DataFrame, step_col: str | None, floats: Floats | None) -> pl.Expr | None:
    if step_col is None or floats is None:
        diagnostics.warn(f"{path}: no step column ({', '.join(STEP_NAMES)}); using the row number as the step")
        return None
    as_float = floats.expr
    probe = frame.select(as_float.alias("s")).get_column("s").drop_nulls()
    if probe.len() == 0 and frame.height:
        decorated = _decorated_count(frame, step_col)
        if decorated is not None:
            return decorated
        diagnostics.warn(f"{path}: step column {step_col!r} is empty; using the row number as the step")
        return None
    whole = int((probe.is_finite() & (probe == probe.floor())).sum())
    if whole * 2 <= probe.len():
        diagnostics.warn(f"{path}: step column {step_col!r} is not whole numbers; using the row number as the step")
        return None
    if whole < probe.len():  # a few damaged cells (a byte flip, a field shifted into the step column)
        # leave their rows without a step: `to_long`/`long_layout` skip them with a warning
        whole_cell = as_float.is_finite() & (as_float == as_float.floor())
        return pl.when(whole_cell).then(as_float.cast(pl.Int64, strict=False))
    return as_float.cast(pl.Int64, strict=False)


_DECORATED = r"^[\s\"]*[A-Za-z_]*[\[( #:=]*(\d+)[\])]?[\s\"]*$"


def _decorated_count(frame: pl.DataFrame, step_col: str) -> pl.Expr | None:
    """A step column whose every filled cell decorates one whole number (`Step[12]`, `epoch 3`, `(40)`):
    that number counts the rows, as a person reads it. None when a cell holds anything else."""
    cells = pl.col(step_col).cast(pl.String)
    filled = frame.select((cells.str.strip_chars().str.len_bytes() > 0).sum()).item()
    matched = frame.select(cells.str.contains(_DECORATED).sum()).item()
    if not filled or matched != filled:
        return None
    return cells.str.extract(_DECORATED, 1).cast(pl.Int64, strict=False)


# ------------------------------------------------------------------ the importer


def lightning_version(path: Path) -> int | None:
    """N of `.../version_N/metrics.csv` (Lightning CSVLogger), else None."""
    m = _VERSION_DIR.match(path.parent.name)
    return int(m.group(1)) if m and path.name == "metrics.csv" else None


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror or exc})") from None


class CsvImporter(Importer):
    """Generic CSV (wide or long), Lightning `metrics.csv`, Keras `CSVLogger` files."""

    name = "csv"
    looks_for = "*.csv with a step/epoch column, Lightning version_N/metrics.csv, Keras training.log"

    def claims(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix in CSV_SUFFIXES:
            if not head.strip() or looks_binary(head):
                return True  # read() reports the empty or binary file
            lines = head_lines(path, head, 8)
            lines = lines[header_index(lines):]  # comments a script wrote over its table are no header
            return (self._csv_header_ok(lines) or (file_measure(path) is not None and _names_over_numbers(lines))
                    or _one_measure_column(path, lines))
        if suffix in KERAS_SUFFIXES and head.strip() and not looks_binary(head):
            return self._keras_header_ok(head_lines(path, head, 8))
        return False

    @staticmethod
    def _csv_header_ok(lines: list[str]) -> bool:
        if not lines:
            return True
        lines = lines[header_index(lines):]
        sep = separator_of(lines[0])
        fields = [f.strip() for f in split_fields(lines[0], sep)]
        if len(fields) < 2 or looks_like_runs_table(fields):
            return False
        if any(" - " in f for f in fields[1:]) and any(f.endswith(("__MIN", "__MAX")) for f in fields):
            return False  # a W&B chart export (read by its own importer)
        if step_column(fields) is not None:
            return True
        bare = {bare_name(f) for f in fields}
        if bare & set(map(bare_name, LONG_VALUE_COLUMNS)) and bare & set(map(bare_name, LONG_NAME_COLUMNS)):
            return True
        row = split_fields(lines[1], sep) if len(lines) > 1 else []
        return any(_METRIC_HINT.search(f) for f in fields) and any(is_numberish(c) for c in row)

    @staticmethod
    def _keras_header_ok(lines: list[str]) -> bool:
        """A Keras `CSVLogger` file named `.log`, or a script's CSV printed to its log: a header
        of names, `epoch` (or another step counter) first, then rows of as many fields whose
        first is a whole number. The header may repeat before the first row (a relaunch that
        appends prints it again, `epoch, loss, ppl, accuracy` twice)."""
        if len(lines) < 2:
            return False
        sep = separator_of(lines[0])
        fields = [f.strip() for f in split_fields(lines[0], sep)]
        first_row = next((ln for ln in lines[1:] if ln.strip() != lines[0].strip()), None)
        if first_row is None:
            return False
        row = split_fields(first_row, sep)
        if len(row) == 1 and "\t" in first_row and "\t" not in lines[0]:  # rows apart by tabs under a `,` header
            row = first_row.split("\t")
        if fields[-1:] == [""] and row[-1:] == [""]:  # `f.write(f"{v}\t")` per column: a separator after every field
            fields, row = fields[:-1], row[:-1]
        counter = fields[0].lower() == "epoch" or (fields[0].lower() in STEP_NAMES and len(row) == len(fields))
        numbers = len(row) == len(fields) and all(is_numberish(c) for c in row)  # `loss,acc` then numbers
        named = not any(map(is_number, fields))  # a header names its columns: a line of numbers is a row (`2d_loss` a name)
        return (len(fields) >= 2 and named and (counter or numbers) and all(re.fullmatch(r"[\w./\-]+", f) for f in fields)
                and row[:1] != [] and (row[0].strip().isdigit() or numbers))

    def group_key(self, path: Path) -> str:
        """Lightning versions of one experiment are read together (one run)."""
        if lightning_version(path) is not None:
            return f"lightning:{path.parent.parent}"
        return str(path)

    def read(self, path: Path) -> list[Table]:
        raw = read_bytes(path)
        if looks_binary(raw[:4096]):
            raise FormatError(path, "binary data, not a CSV text file")
        text = decode(path, raw)
        if not text.strip():
            diagnostics.warn(f"{path}: empty file, no data")
            return []
        parsed = read_string_frame(path, text)
        frame = parsed.frame
        if frame.height == 0 or frame.select(pl.any_horizontal(pl.all().is_not_null()).sum()).item() == 0:
            diagnostics.warn(f"{path}: header only, no data rows")
            return []
        failed, status = None, ledger.status_column(frame) if "step" not in {c.strip().lower() for c in frame.columns} else None
        if status is not None:  # a results ledger: a row an experiment, a failed one's values not logged
            ended = ledger.last_failure(frame, status)
            frame, failed = ledger.as_experiments(frame, status)
        ranks, drop = _rank_column(frame)
        runs = _run_column(frame) if ranks is None else None
        if runs is not None:
            drop = drop + (runs[0],)
        long = sweep_arms_named(path, self._long(path, frame, parsed.sep, drop=drop))
        version = lightning_version(path)
        if version is not None:
            fmt, run_key, seg_key, order = "lightning_csv", str(path.parent.parent), str(path.parent), (version,)
        else:
            fmt = "keras_csv" if self._is_keras(frame) else "csv"
            run_key = seg_key = str(path)
            order = ()
        if long.height == 0:
            diagnostics.warn(f"{path}: no numeric values found")
        meta = hparams_plan(path.parent) if version is not None else {}
        if failed:
            meta = {**meta, "ledger.failed": failed, "step.from": "the row's place (a row an experiment)"}
            if failed[-1] == frame.height:  # the ledger ends in an experiment that failed
                meta["plan.error"] = ended
        table = Table(frame=long, source=path, format=fmt, run_key=run_key, segment_key=seg_key, order=order,
                      meta=meta)
        if ranks is not None:  # a rank column: one run a rank when ranks print their own values
            with diagnostics.collecting():  # the whole file's read above warned once
                parts = rankcolumn.split(ranks, lambda rows: self._long(path, frame[rows], parsed.sep, drop=drop))
            if parts:
                return rankcolumn.rank_tables(table, parts)
        if runs is not None:  # a column naming the run (`Run`, `fold`, `seed`): one run each, named for it
            col, values = runs
            out = []
            with diagnostics.collecting():
                for v in values:
                    rows = frame.with_row_index("_i").filter(pl.col(col).str.strip_chars() == v).get_column("_i").to_numpy()
                    part = sweep_arms_named(path, self._long(path, frame[rows], parsed.sep, drop=drop))
                    if part.height:
                        out.append(replace(table, frame=part, run_key=f"{run_key}[{col.strip()}={v}]",
                                           segment_key=f"{seg_key}[{col.strip()}={v}]",
                                           run_name=f"{key_name(run_key)}[{col.strip()} {v}]", meta={**meta, "run": v}))
            if len(out) >= 2:
                return out
        return [table]

    @staticmethod
    def _is_keras(frame: pl.DataFrame) -> bool:
        return frame.columns[0].strip().lower() == "epoch" and step_column(frame.columns) == frame.columns[0]

    @staticmethod
    def _long(path: Path, frame: pl.DataFrame, sep: str, drop: tuple[str, ...] = ()) -> pl.DataFrame:
        low = {c.strip().lower(): c for c in frame.columns}
        step_col = forward_step(frame, sep, step_column(frame.columns))
        wall_col = next((low[n] for n in WALL_NAMES if n in low), None)
        bare = {bare_name(c): c for c in frame.columns}
        name_col = next((bare[n] for n in map(bare_name, LONG_NAME_COLUMNS) if n in bare), None)
        value_col = next((bare[n] for n in map(bare_name, LONG_VALUE_COLUMNS) if n in bare), None)
        if name_col is not None and value_col is not None:
            return long_layout(path, frame, sep, step_col=step_col, name_col=name_col,
                               value_col=value_col, wall_col=wall_col)
        index = tuple(c for c in frame.columns[:1] if c.strip().lower() in PANDAS_INDEX_COLUMNS)
        if step_col is None:
            step_col = _counting_column(frame, sep, skip={wall_col, *index, *drop})
        return named_by_file(path, named_by_tag(path, to_long(path, frame, sep, step_col=step_col, wall_col=wall_col,
                                                               drop=index + drop)))


def _names_over_numbers(lines: list[str]) -> bool:
    """A header of names over rows of as many numbers (a file whose name says what they measure)."""
    if len(lines) < 3:
        return False
    sep = separator_of(lines[0])
    names = split_fields(lines[0], sep)
    rows = [split_fields(ln, sep) for ln in lines[1:]]
    if names[-1:] == [""] and all(r[-1:] == [""] for r in rows):  # `f.write(f"{a},{b},")`: a separator after every field
        names, rows = names[:-1], [r[:-1] for r in rows]
    return (len(names) >= 2 and not any(map(is_numberish, names))
            and all(len(r) == len(names) and all(map(is_numberish, r)) for r in rows))


def _one_measure_column(path: Path, lines: list[str]) -> bool:
    """One column of numbers under a header that names a measure (`train loss`: `df.to_csv(sep='\\t')`
    of one series), or columns under pandas' own numbers (`,0` or `,0,1`: `pd.DataFrame(losses).to_csv(...)`
    of a list of values or of pairs, its index first, or `0,1` alone with `index=False`) in a file named for a
    measure (`epoch_losses.csv`): the header is pandas' count of the columns, not a row of values."""
    from ..frame import infer_role

    if len(lines) < 3:
        return False
    sep = separator_of(lines[0])
    head = [f.strip() for f in split_fields(lines[0], sep)]
    rows = [split_fields(ln, sep) for ln in lines[1:]]
    if any(len(r) != len(head) or not all(map(is_numberish, r)) for r in rows):
        return False
    if head == [str(k) for k in range(len(head))]:  # pandas' positional names with `index=False`: `0,1`
        # over measured values only: a first column of whole numbers may count on from that `0` (a data row)
        return file_measure(path) is not None and not all(re.fullmatch(r"\s*[-+]?\d+\s*", r[0]) for r in rows)
    if len(head) == 1:
        return not is_numberish(head[0]) and infer_role(head[0]) in MEASURE_ROLES
    return (len(head) >= 2 and head[0] == "" and all(h.isdigit() for h in head[1:])
            and file_measure(path) is not None)


BACKWARD_SHARE = 0.25
"""A step column whose value goes back at more than this share of its rows is no step (an episode's
`steps`, its length, beside the `episode` count); a relaunch or two go back a few times only."""


def forward_step(frame: pl.DataFrame, sep: str, step_col: str | None) -> str | None:
    """The step column chosen by name, unless its values go back at every few rows (`steps` of
    `episode,total_reward,steps`: each episode's length) while another column named as a step or the
    loop's count (`episode`) rises at every row: then that one, as a person reads the table. A
    within-epoch `step` beside an `epoch` that repeats stays (the batch counter is read as before)."""
    if step_col is None or frame.height < 4:
        return step_col

    def diffs(col: str) -> pl.Series:
        vals = frame.select(_cell(col, sep).str.strip_chars().cast(pl.Float64, strict=False).alias("v")).get_column("v")
        return vals.diff().drop_nulls() if vals.null_count() == 0 else pl.Series([-1.0])

    back = diffs(step_col)
    if is_epoch_name(step_col) and back.len() >= 3 and float((back == 0).mean() or 0.0) > 0.5 \
            and back.len() + 1 > 2.5 * (int((back != 0).sum()) + 1):
        # an epoch shared by most rows beside a first column that counts every row (`index, epoch,
        # sample_count, train_loss, ...` of a loss history written a row a batch): that count. Two rows an
        # epoch are its phases (`epoch,type,loss` rows of train and validation under pandas' index), no batches
        finer = _counting_column(frame, sep, skip={step_col})
        if finer is not None:
            return finer
    if back.len() >= 3 and bool((back == 0).all()):  # one value on every row (mbrl's `train_iteration`
        # of one call to `train()`): a setting, no count; the next column named as a count, if any
        other = step_column([c for c in frame.columns if c != step_col])
        return other if other is not None else step_col
    if back.len() == 0 or float((back < 0).mean() or 0.0) <= BACKWARD_SHARE:
        return step_col
    other = step_column([c for c in frame.columns if c != step_col])
    # the other must count every row (`episode`), not repeat (an `epoch` over a within-epoch `step` that restarts)
    return other if other is not None and bool((diffs(other) > 0).all()) else step_col


def _counting_column(frame: pl.DataFrame, sep: str, skip: set) -> str | None:
    """The column that counts the rows (whole numbers that go up every row, `x1` of a Julia
    `DataFrame(..., :auto)`, `Gen`), where no column is named as the step: the rows' own count, as
    the bare-number reader takes a column that counts. Wherever it stands (#24: the same table with its
    columns in another order is read the same): among several, one that counts by a fixed stride, then the
    one with the smallest values (the count nearest the rows'), then by name."""
    cols = [c for c in frame.columns if c not in skip]
    if not cols or frame.height < 3:
        return None
    vals = frame.select(_cell(c, sep).str.strip_chars().cast(pl.Float64, strict=False).alias(c) for c in cols)
    steps = vals.select(pl.all().diff().slice(1))
    ok = vals.select((pl.all().null_count() == 0) & (pl.all() == pl.all().floor()).all()).row(0)
    rises = steps.select((pl.all() > 0).all()).row(0)
    fixed = steps.select(pl.all().n_unique() == 1).row(0)
    last = vals.select(pl.all().last()).row(0)
    found = [(not f, v, c) for c, o, r, f, v in zip(cols, ok, rises, fixed, last) if o and r]
    return min(found)[2] if found else None


MEASURE_ROLES = ("loss", "eval_loss", "reward", "accuracy", "perplexity")


_TB_DOWNLOAD = re.compile(r"^run[-_](?P<run>.*?)[-_]tag[-_](?P<tag>.+)$")
"""TensorBoard's download name, `run-<run>-tag-<tag>` (the tag's `/` written `_`)."""


def tb_download_tag(path: Path) -> str | None:
    """The tag of a file TensorBoard's UI downloaded (`run-version_0-tag-train_loss.csv` -> `train_loss`)."""
    m = _TB_DOWNLOAD.match(path.stem)
    return m["tag"] if m else None


def stem_name(path: Path) -> str:
    """`loss.txt` -> `loss`, `G_losses.txt` -> `G_losses`: the stem, its spaces as `_`."""
    return re.sub(r"\s+", "_", path.stem.strip()) or "value"


_HISTORY = re.compile(r"histor|train(?:ing)?[_-]?log", re.I)
"""A training's history or log (`training_history.json`, `training_log.json`): what it holds unnamed is what
training lowers, the loss."""


def named_measure(path: Path) -> str | None:
    """What the file's name says its series measure: `loss.json` the loss, `train_rewards.json` the
    rewards, a training history or log (`training_history.json`, `train_log.json`) what training lowers, the
    loss; else None."""
    found = file_measure(path)
    if found is not None:
        return found
    return "loss" if _HISTORY.search(path.stem) else None


def file_measure(path: Path) -> str | None:
    """What a file's name says its series measure (`loss.json`, `losses_step_sizes.csv`: the loss;
    `train_rewards.csv`: the rewards), else None."""
    from ..frame import infer_role

    from ..frame import is_lower_better_score

    stem = re.sub(r"\s+", "_", path.stem.strip())
    # an error the name says (`learn_error.tsv`, `test_error.tsv`: CatBoost's, its columns named by the loss
    # function) is what stands for the loss, lower is better
    return stem if stem and (infer_role(stem) in MEASURE_ROLES or is_lower_better_score(stem)) else None


_COUNT_WORDS = frozenset({"step", "steps", "iter", "iters", "iteration", "iterations", "count", "counts", "num",
                          "number", "len", "length", "lengths", "size", "time", "times", "seconds", "frames",
                          "episodes", "samples", "tokens", "epoch", "epochs"})


def counts_something(name: str) -> bool:
    """`Total Steps`, `episode_length`, `n_samples`: a column that names a count or a duration measures
    that, not what the file's name says (`episode_rewards.csv` holding steps per episode)."""
    return bool(set(re.split(r"[^a-z]+", name.lower())) & _COUNT_WORDS)


def named_by_file(path: Path, long: pl.DataFrame) -> pl.DataFrame:
    """Columns that name no measure of their own (`x2`, `x3` of a Julia `DataFrame(..., :auto)` in
    `losses.csv`) measure what the file's name says: named `<measure>/<column>`, as a person reads
    them. Unchanged when a column names its own measure, or the file's name says none."""
    from ..frame import infer_role, sweep_arm

    measure = file_measure(path)
    if measure is None or long.height == 0:
        return long
    names = long.get_column("metric").unique().to_list()
    if any(infer_role(str(n)) != "other" or counts_something(str(n)) or sweep_arm(str(n)) for n in names):
        return long  # (a sweep's arms, `learning_rate_0.1`, are named by `sweep_arms_named`)
    return long.with_columns(metric=pl.concat_str([pl.lit(f"{measure}/"), pl.col("metric").cast(pl.String)])
                             .cast(long.schema["metric"]))


def named_by_tag(path: Path, long: pl.DataFrame) -> pl.DataFrame:
    """TensorBoard's CSV download (`run-<run>-tag-<tag>.csv`: `Wall time,Step,Value`) holds one curve, the
    tag its file is named for: its `Value` is named by that tag, as the person who downloaded it reads it."""
    tag = tb_download_tag(path)
    if tag is None or long.height == 0 or long.get_column("metric").unique().to_list() != ["Value"]:
        return long
    return long.with_columns(metric=pl.lit(tag).cast(long.schema["metric"]))


def sweep_arms_named(path: Path, long: pl.DataFrame) -> pl.DataFrame:
    """Columns that are one setting at several values (`learning_rate_0.1`, `learning_rate_0.01`)
    are the arms of a sweep side by side, and what they measured is what the file's name says
    beside that setting (`learning_rate_error.csv`: the error): each arm's curve is named
    `error (learning_rate_0.1)`. Unchanged when a column is no arm of that one setting, or the
    file's name says nothing beside it."""
    from ..frame import sweep_arm

    names = long.get_column("metric").unique().to_list() if long.height else []
    settings = {(sweep_arm(str(n)) or "").lower() for n in names}
    if len(names) < 2 or len(settings) != 1 or "" in settings:
        return long
    setting = {w for w in re.split(r"[^a-z]+", settings.pop()) if w}
    quantity = "_".join(w for w in re.split(r"[^A-Za-z]+", path.stem) if w and w.lower() not in setting)
    if not quantity:
        return long
    return long.with_columns(metric=pl.format("{} ({})", pl.lit(quantity), pl.col("metric").cast(pl.String))
                             .cast(TABLE_SCHEMA["metric"]))


RUN_NAMES = ("run", "run_id", "run_no", "fold", "seed", "trial", "repeat", "experiment", "model")
"""Columns that name which run a row belongs to, in a file several runs appended to (a results table's
`Model, Seed, Epoch, ...`: a block of epochs a model)."""


def _run_column(frame: pl.DataFrame) -> tuple[str, list[str]] | None:
    """A column naming the run (`Run`, `fold`, `seed`, `Model`) over rows whose step starts again with
    each run: the first such column and its values in the file's order; None when there is none, each
    holds one value (`Seed` 0 beside the `Model` that changes), or its rows do not each restart the count
    (a setting logged on every row)."""
    low = {c.strip().lower(): c for c in frame.columns}
    step_col = step_column(frame.columns)
    if step_col is None:
        return None
    return next((found for found in (_restarting_runs(frame, low[n], step_col) for n in RUN_NAMES
                                     if n in low and low[n] != step_col) if found), None)


def _restarting_runs(frame: pl.DataFrame, col: str, step_col: str) -> tuple[str, list[str]] | None:
    """`col` and its values when its rows come in one block a value, each block counting its steps again."""
    keys = frame.get_column(col).cast(pl.String).str.strip_chars()
    values = [v for v in keys.unique(maintain_order=True).to_list() if v]
    if not 2 <= len(values) <= 1000:
        return None
    step = frame.get_column(step_col).cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)
    if step.null_count() == step.len():
        return None
    changes = int((keys != keys.shift(1)).fill_null(False).sum())
    if changes != len(values) - 1:  # each run's rows together, one block each
        return None
    firsts = pl.DataFrame({"k": keys, "s": step}).group_by("k", maintain_order=True).agg(pl.col("s").first())
    again = firsts.get_column("s").drop_nulls()
    return (col, values) if again.len() >= 2 and float(again.max() - again.min()) <= 1 else None


def _rank_column(frame: pl.DataFrame) -> tuple[np.ndarray | None, tuple[str, ...]]:
    """Each row's rank and the rank column to leave out of the metrics, when a rank column
    is a dimension of the file (see `rankcolumn`); (None, ()) otherwise."""
    col, step_col = rankcolumn.rank_key(frame.columns), step_column(frame.columns)
    if col is None or step_col is None or col == step_col:
        return None, ()
    ranks = rankcolumn.row_ranks(frame.get_column(step_col).str.strip_chars(),
                                 frame.select(to_float(pl.col(col))).to_series())
    return (ranks, (col,)) if ranks is not None else (None, ())


def long_layout(path: Path, frame: pl.DataFrame, sep: str, *, step_col: str | None, name_col: str,
                value_col: str, wall_col: str | None) -> pl.DataFrame:
    """`step, metric, value` rows (one logged value per row), read order kept."""
    cols = float_columns(frame, [c for c in (step_col, value_col) if c is not None], sep)
    step = _step_expr(path, frame, step_col, cols.get(step_col) if step_col else None)
    wall = wall_time_expr(frame, wall_col, sep) if wall_col else None
    value = cols[value_col].expr
    bad = cols[value_col].texts
    if bad:
        diagnostics.warn(f"{path}: {bad} value cell(s) that are not numbers skipped")
    split = next((c for c in frame.columns if c not in (step_col, name_col, value_col, wall_col)
                  and frame.schema[c] == pl.String and _split_column(frame.get_column(c))), None)
    out = frame.select(
        step=step if step is not None else pl.int_range(pl.len(), dtype=pl.Int64),
        wall_time=wall if wall is not None else pl.lit(None, pl.Float64),
        metric=pl.col(name_col).str.strip_chars(),
        value=value,
        split=pl.col(split).str.strip_chars() if split is not None else pl.lit(None, pl.String),
    ).filter(pl.col("value").is_not_null() & pl.col("metric").is_not_null())
    if split is not None:  # R keras' `as.data.frame(history)`: `epoch, value, metric, data` (training/validation)
        pairs = out.select("split", "metric").unique().iter_rows()
        key = pl.concat_str([pl.col("split").fill_null(""), pl.col("metric")], separator="\x00")
        out = out.with_columns(metric=key.replace_strict({f"{sp or ''}\x00{m}": split_metric(sp, m) for sp, m in pairs},
                                                         return_dtype=pl.String))
    lost = out.filter(pl.col("step").is_null()).height
    if lost:
        _warn_stepless(path, step_col, lost, lost)
    out = out.filter(pl.col("step").is_not_null())
    return out.select([pl.col(c).cast(t) for c, t in TABLE_SCHEMA.items()])


