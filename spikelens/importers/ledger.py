"""A results ledger: a table whose rows are experiments, each with a status (`keep`, `discard`, `crash`).

An automated research loop (autoresearch's `results.tsv`: `commit, val_bpb, memory_gb, ..., num_steps,
status, description`) or a hand-kept sweep table appends one row per training run it tried. A person
reads it row by row: the row's place is the experiment, not a step of one run (its `num_steps` is how
long that experiment trained, a value like the others), and a row whose status says it failed holds
no measurement (autoresearch writes zeros there: `0.000000 ... crash`). So the rows are stepped by
their place (from 1), and a failed row's values are not logged; the failed experiments are named in
the table's meta (`ledger.failed`: their steps) and a last row that failed is how the ledger ended.
A status column is one named as such (`status`, `state`, `outcome`, `result`) whose every cell is a
status word, at least one of them a failure: a column of words that are no statuses is no ledger.
"""
from __future__ import annotations

import polars as pl

STATUS_NAMES = frozenset({"status", "state", "outcome", "result", "run_status"})
FAILED = frozenset({"crash", "crashed", "fail", "failed", "failure", "error", "errored", "oom", "killed", "timeout",
                    "timed_out", "diverged", "nan", "broken", "aborted"})
STATUS_WORDS = FAILED | frozenset({"keep", "kept", "discard", "discarded", "baseline", "ok", "success", "succeeded",
                                    "done", "finished", "completed", "complete", "pass", "passed", "best", "improved",
                                    "worse", "reverted", "revert", "accepted", "rejected", "skip", "skipped"})


def status_column(frame: pl.DataFrame) -> str | None:
    """The ledger's status column (see the module doc), else None."""
    for c in frame.columns:
        if c.strip().lower() not in STATUS_NAMES or frame.schema[c] != pl.String:
            continue
        words = frame.get_column(c).str.strip_chars().str.to_lowercase().drop_nulls()
        words = words.filter(words != "")
        if words.len() and bool(words.is_in(list(STATUS_WORDS)).all()) and bool(words.is_in(list(FAILED)).any()):
            return c
    return None


def as_experiments(frame: pl.DataFrame, status: str) -> tuple[pl.DataFrame, list[int]]:
    """The ledger with a leading `step` column (the row's place, from 1) and its failed rows' other cells
    emptied; and the steps of the failed rows."""
    failed = frame.get_column(status).str.strip_chars().str.to_lowercase().is_in(list(FAILED)).fill_null(False)
    keep = [c for c in frame.columns if c != status]
    out = frame.with_columns(pl.when(failed).then(pl.lit(None, pl.String)).otherwise(pl.col(c)).alias(c)
                             for c in keep if frame.schema[c] == pl.String)
    steps = pl.int_range(1, frame.height + 1, eager=True).cast(pl.String).alias("step")
    return out.insert_column(0, steps), [i + 1 for i in failed.arg_true().to_list()]


def last_failure(frame: pl.DataFrame, status: str) -> str:
    """How the ledger's last (failed) experiment is told: its status word and its description, if any."""
    row = frame.row(frame.height - 1, named=True)
    said = next((str(row[c]).strip() for c in frame.columns
                 if c.strip().lower() in ("description", "desc", "notes", "note", "comment") and row[c]), "")
    return f"experiment {frame.height}: {str(row[status]).strip()}" + (f" ({said[:120]})" if said else "")
