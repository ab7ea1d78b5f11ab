"""What a training job can do about a spike or a divergence: the steps to skip (as batches,
and as samples where the log gives the batch size) and the checkpoint to roll back to (the
last one saved before the onset, from `checkpoint-N/` folders beside the log or the
"saving checkpoint" lines in it), in the forms trainers take: a `skip_batches` list that
`spikelens.replay.callbacks.SkipBatches` feeds a PyTorch / Lightning loader, and Megatron's
`--train-range-to-skip` arguments.

A batch index here is the optimizer step as logged (one batch per step); with gradient
accumulation each step is that many micro-batches, which the JSON says.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .detect.base import RunContext
from .detect.stats import median_interval
from .model.finding import Finding

SCHEMA = "spikelens.remedy/1"
REMEDIED = ("spike", "divergence")
NOT_BATCHES = ("kl", "reward", "entropy", "accuracy", "other")
"""Roles whose events no skipped batch undoes: a policy update too large, a reward that fell, a
score that fell (measured at evaluations, whose steps are no batches), a side quantity that ran
away (a Q-value, a policy's std: the whole run feeds them)."""

_CKPT_DIR = re.compile(r"^(?:checkpoint|ckpt|step|iter|global_step|model_step)[-_]?0*(\d+)$|"
                       r"(?:^|[-_])step=(\d+)(?:[-_.]|$)", re.I)
"""Checkpoint folders or files as trainers name them: HF `checkpoint-500`, Megatron `iter_0000500`,
DeepSpeed `global_step500`, Lightning `epoch=0-step=500.ckpt`, `step_500`, `ckpt-500`."""
_CKPT_LINE = re.compile(
    rb"(?i)sav(?:e|ed|ing)\b[^\n]{0,80}?checkpoint[^\n]*?"
    rb"(?:iteration|step|checkpoint-|global_step|iter_|step_|step=)\s*[:=]?\s*0*(\d+)")
"""'saving checkpoint at iteration 500', 'Saving model checkpoint to out/checkpoint-500',
'successfully saved checkpoint at iteration 500'."""
_BATCH_LINE = re.compile(rb"(?i)\b(?:global[ _]batch[ _]size|train_batch_size|batch[ _]size)\b[ .:=]*(\d+)")
_BATCH_METRIC = re.compile(r"(?:^|[/_\-. ])(?:global[_\- ]?)?batch[_\- ]?size$", re.I)
MAX_SCAN_BYTES = 256 << 20
"""Text logs larger than this are not scanned for checkpoint lines."""


def attach(findings: list[Finding], ctx: RunContext, sources: Iterable[str]) -> None:
    """Put a remedy in the evidence of every loud spike and divergence of the run (not where a wrong
    setting drove it: every batch sees the setting, so skipping some changes nothing)."""
    todo = [f for f in findings if f.kind in REMEDIED and f.severity != "info" and f.start_step is not None
            and not any(c.cause == "setting" for c in f.causes) and ctx.roles.get(f.metric or "") not in NOT_BATCHES]
    if not todo:
        return
    sources = [str(s) for s in sources]
    saves = checkpoint_steps(sources)
    batch = batch_size(ctx, sources)
    for f in todo:
        f.evidence["remedy"] = remedy_of(f, ctx, saves, batch)


def remedy_of(f: Finding, ctx: RunContext, saves: dict[int, str], batch: int | None) -> dict[str, Any]:
    ranges = skip_ranges(f, ctx)
    onset = ranges[0][0]
    before = [s for s in saves if s < onset]
    rollback = None
    if before:
        s = max(before)
        rollback = {"step": s, "where": saves[s]}
    out: dict[str, Any] = {"onset_step": onset, "skip_steps": ranges, "skip_batches": ranges,
                           "batch_size": batch, "rollback": rollback,
                           "megatron_args": "--train-range-to-skip " + " ".join(f"{a} {b}" for a, b in ranges)}
    if batch:
        out["skip_samples"] = [[a * batch, (b + 1) * batch - 1] for a, b in ranges]
    return out


def skip_ranges(f: Finding, ctx: RunContext) -> list[list[int]]:
    """Inclusive step ranges: each bad step of a one-step jump; for a spike the steps from
    just after the last normal logged point to the peak (the batches that drove it up may be
    any of the unlogged steps in between); for a divergence from its turn to its end."""
    steps = f.evidence.get("steps")
    if f.kind == "spike" and f.evidence.get("bad_batch") and steps:
        return [[int(s), int(s)] for s in steps]
    s = ctx.series.get(f.metric) if f.metric else None
    gap = int(median_interval(s.step)) if s is not None and len(s) > 1 else 1
    start = int(f.start_step)
    if f.kind == "spike":
        peak = int(f.peak_step if f.peak_step is not None else start)
        return [[max(start - gap + 1, 0), peak]]
    last = f.end_step if f.end_step is not None else f.evidence.get("last_step")
    if last is None and s is not None and len(s):
        last = int(s.step[-1])
    return [[start, int(last if last is not None else start)]]


def checkpoint_steps(sources: list[str]) -> dict[int, str]:
    """Step -> where the save shows: checkpoint folders or files in the folder of each source
    (and one level down: `checkpoints/`), then 'saving checkpoint' lines of the text sources."""
    found: dict[int, str] = {}
    folders = {Path(s).parent for s in sources if "://" not in s}
    for d in sorted(folders):
        for p in _entries(d):
            step = _ckpt_step(p.name)
            if step is not None:
                found.setdefault(step, str(p))
            elif p.is_dir() and p.name.lower() in ("checkpoints", "ckpt", "ckpts", "checkpoint", "saved_models"):
                for q in _entries(p):
                    st = _ckpt_step(q.name)
                    if st is not None:
                        found.setdefault(st, str(q))
    for src in sources:
        for step in _scan(src, _CKPT_LINE):
            found.setdefault(step, f"{src}: saving checkpoint at step {step}")
    return found


def batch_size(ctx: RunContext, sources: list[str]) -> int | None:
    """The batch size the log gives: a logged metric named so (Megatron's `batch-size`), an HF
    `trainer_state.json`'s `train_batch_size`, or a 'global batch size ... N' line."""
    for name, s in ctx.series.items():
        if _BATCH_METRIC.search(name) and len(s):
            v = s.value[np.isfinite(s.value)]
            if v.size and float(np.median(v)) >= 1:
                return int(round(float(np.median(v))))
    for src in sources:
        if src.endswith("trainer_state.json"):
            try:
                n = json.loads(Path(src).read_text(encoding="utf-8")).get("train_batch_size")
            except (OSError, ValueError):
                continue
            if isinstance(n, int) and n > 0:
                return n
    for src in sources:
        sizes = _scan(src, _BATCH_LINE, first=True)
        if sizes:
            return sizes[0]
    return None


def _entries(d: Path) -> list[Path]:
    try:
        return list(d.iterdir())
    except OSError:
        return []


def _ckpt_step(name: str) -> int | None:
    stem = re.sub(r"\.(?:ckpt|pt|pth|bin|safetensors|tar)$", "", name)
    m = _CKPT_DIR.search(stem)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def _scan(src: str, pattern: re.Pattern, first: bool = False) -> list[int]:
    """Numbers a pattern captures in a text source (binary and huge files are skipped)."""
    p = Path(src)
    try:
        if "://" in src or not p.is_file() or p.stat().st_size > MAX_SCAN_BYTES:
            return []
        with p.open("rb") as fh:
            if b"\0" in fh.read(4096):
                return []  # an event file or a database, not a text log (not read whole)
        data = p.read_bytes()
    except OSError:
        return []
    out = []
    for m in pattern.finditer(data):
        out.append(int(m.group(1)))
        if first:
            break
    return out


# -- the file `--remedy FILE` writes

def remedy_document(report) -> dict[str, Any]:
    """Every run's remedies, merged skip lists and Megatron arguments, as one JSON object."""
    runs = []
    for run in report.runs:
        items = []
        for f in run.findings:
            r = f.evidence.get("remedy")
            if r:
                items.append({"kind": f.kind, "metric": f.metric, "severity": f.severity, "message": f.message, **r})
        if not items:
            continue
        ranges = _merge([tuple(x) for it in items for x in it["skip_batches"]])
        rollbacks = [it["rollback"] for it in items if it["rollback"]]
        first = min(items, key=lambda it: it["onset_step"])
        runs.append({
            "run": run.run, "remedies": items,
            "skip_batches": [list(r) for r in ranges],
            "rollback": first["rollback"] if first["rollback"] else (rollbacks[0] if rollbacks else None),
            "megatron_args": "--train-range-to-skip " + " ".join(f"{a} {b}" for a, b in ranges),
            "lightning": {"skip_batches": [i for a, b in ranges for i in range(a, b + 1)]},
        })
    return {"schema": SCHEMA, "batch_unit": "optimizer step as logged (one batch per step)", "runs": runs}


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def write_remedy(report, path: str | os.PathLike) -> Path:
    """The remedy JSON, written atomically (a temporary file beside it, then one rename)."""
    from .outputs import atomic_write_text

    return atomic_write_text(path, json.dumps(remedy_document(report), indent=1) + "\n")


def advice_line(remedy: dict[str, Any]) -> str:
    """The remedy as one sentence of advice: the checkpoint, the batches, the arguments."""
    ranges = remedy["skip_batches"]
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges[:6]) + (" …" if len(ranges) > 6 else "")
    back = remedy.get("rollback")
    if back and ": " not in str(back["where"]):  # a checkpoint folder or file
        where = f"roll back to {Path(str(back['where'])).name} (step {back['step']})"
    elif back:
        where = f"roll back to the checkpoint saved at step {back['step']} (per the log)"
    else:
        where = "roll back to the last checkpoint before step " + str(remedy["onset_step"])
    samples = ""
    if remedy.get("skip_samples"):
        sm = remedy["skip_samples"]
        shown_sm = ", ".join(f"{a}-{b}" for a, b in sm[:4]) + (" …" if len(sm) > 4 else "")
        samples = f" (samples {shown_sm} at batch size {remedy['batch_size']})"
    return f"Remedy: {where} and skip batch{'es' if len(ranges) > 1 or ranges[0][0] != ranges[0][1] else ''} " \
           f"{shown}{samples}; Megatron: `{remedy['megatron_args']}`; `--remedy FILE` writes them as JSON."
