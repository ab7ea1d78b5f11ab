"""Read rate on files written the way public training scripts write their metrics (#24).

The corpus is a list of writer snippets harvested from public repositories (csv.writer and
DictWriter headers, pandas `to_csv` of a history, `json.dump(history)` in its many shapes,
`np.savetxt`, JSON-lines appenders, YAML, RL progress tables, sweep result files...). It is kept
outside the project (`~/.cache/spikelens-formats/writers.jsonl`: repository, path, the snippet,
and what the step and the loss are); no file of those repositories is copied here.

Each writer is rendered into the file it would leave after a realistic run (a decaying noisy
loss, 50-3000 points, the file name the source uses), and spikelens reads it as `analyze` would
(`api.load_runs`, then the main metric `analyze` judges, `RunContext.judged` on the stitched run). Each file ends as one of:

- `read`: the main metric is the writer's loss (or its score, for a run that logs only a
  score) and its steps are the writer's steps;
- `wrong step` / `wrong loss`: read, but the steps or the main metric differ;
- `refused: <reason>`: nothing read (for a writer whose file is no training curve, a sweep
  summary or a pickle, a refusal is the right answer, and a read is `read (not a curve)`).

The corpus is split in two halves by a hash of the repository (of the snippet where the index
did not name one), fixed before any result was seen: tune on `tune`, report both. Each session's
fresh harvest is its own file (`--corpus writers.s16.jsonl`), measured once on the start code first.

The renderers cover every writer shape met so far (session 15's `format_writers_ext.py` is folded
in: x/y curve dumps, records keyed `epoch_N`, pandas split/table JSON, values written as strings,
YOLOv5's padded CSV, StyleGAN's `stats.jsonl`, YAML/TOML, step columns in units of K).

    python benchmarks/format_writers.py [--split tune|check|all] [--show] [--out FILE]
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import pickle
import re
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

CORPUS = Path(os.environ.get("SPIKELENS_FORMATS", Path.home() / ".cache" / "spikelens-formats")) / "writers.jsonl"
JUDGED = ("loss", "eval_loss", "reward", "accuracy", "perplexity")
"""Roles a main metric must have for `analyze` to judge the run (else: no loss-like metric)."""

# ------------------------------------------------------------------ values of a realistic run

_STEPISH = re.compile(r"^(?:epoch|epochs|epochnum|epoch_id|step|steps|iter|iteration|iterations|num_iter|i|index|"
                      r"round|episode|generation|gen|frame|t|x1|timesteps?|global_step|training_iteration|"
                      r"training_steps|num_updates|total_train_updates|batch|batch_no|batch_id|step_in_epoch|"
                      r"epoch_step|iter_idx|timesteps_total|env)$", re.I)
_RISING = re.compile(r"acc|top_?k|f1|precision|recall|map|dice|iou|auc|psnr|ssim|reward|return|rew|score|fitness|"
                     r"won|oa|macc|ep_?len|success|_met$", re.I)
_LR = re.compile(r"(?:^|[/_ ])lr|learn", re.I)
_TIME = re.compile(r"time|elapsed|duration|wall|_s$|\(min\)|ts$|timestamp|eta", re.I)


def _rng(spec: dict) -> np.random.Generator:
    return np.random.default_rng(int(hashlib.sha1(spec["id"].encode()).hexdigest()[:8], 16))


def points(spec: dict) -> int:
    """How many records: the writer's own count where it says, else 50-300 epochs or 200-3000 steps."""
    if spec.get("n"):
        return int(spec["n"])
    r = _rng(spec)
    epochs = str(spec.get("step", "")).lower().startswith(("epoch", "row", "round", "gen", "key"))
    return int(r.integers(50, 300) if epochs else r.integers(200, 3000))


def curve(kind: str, n: int, r: np.random.Generator) -> np.ndarray:
    """A decaying noisy loss, a rising noisy score, a decaying lr, a growing time."""
    x = np.arange(n, dtype=float)
    if kind == "loss":
        base = 0.3 + 2.2 * np.exp(-x / max(n / 5, 1))
        return base * np.exp(r.normal(0, 0.05, n))
    if kind == "score":
        return np.clip(0.4 + 0.5 * (1 - np.exp(-x / max(n / 4, 1))) + r.normal(0, 0.02, n), 0, 1)
    if kind == "lr":
        return 1e-3 * 0.5 * (1 + np.cos(np.pi * x / n))
    if kind == "time":
        return np.cumsum(r.uniform(10, 12, n))
    return np.abs(1 + 0.1 * r.normal(0, 1, n))


def kind_of(name: str, spec: dict) -> str:
    if name == spec.get("loss") or (spec.get("multi_loss") and "loss" in name.lower()):
        return "score" if spec.get("score_only") else "loss"
    low = name.lower()
    if _LR.search(low) and "loss" not in low:
        return "lr"
    if _TIME.search(low) and "loss" not in low:
        return "time"
    if _RISING.search(low) and "loss" not in low:
        return "score"
    if re.search(r"loss|mse|mae|cost|err|elbo|kld|total|nll|ppl|logloss|^r$", low) or low in ("train", "test", "val"):
        return "loss"
    return "other"


def step_values(name: str, n: int, spec: dict) -> np.ndarray:
    """The writer's counter: epochs from 0 or 1, steps at a logging interval, timesteps by a rollout."""
    k = str(spec.get("step_values") or "")
    if name == spec.get("step") and k.startswith("x"):  # counted in units of K (env steps, frames, samples)
        return int(k[1:]) * np.arange(1, n + 1)
    low = name.lower()
    if low.startswith(("timestep", "total_timesteps", "timesteps_total")):
        return 2048 * np.arange(1, n + 1)
    if low in ("step", "steps", "iteration", "iter", "global_step", "num_updates", "training_steps", "i",
               "total_train_updates", "num_iter", "frame") and n > 400:
        return 10 * np.arange(1, n + 1)
    start = 0 if spec.get("epoch0") else 1
    return np.arange(start, n + start)


def table(spec: dict) -> tuple[dict[str, list], np.ndarray]:
    """Column name -> values for the writer's columns; and the expected steps of the loss."""
    n, r = points(spec), _rng(spec)
    cols: dict[str, list] = {}
    step_col = spec.get("step", "row")
    steps = np.arange(n)
    for c in spec["cols"]:
        if c == step_col or (_STEPISH.match(c) and c != spec.get("loss")):
            v = step_values(c, n, spec)
            if c == step_col:
                steps = v
            cols[c] = [int(x) for x in v]
        elif c in (spec.get("text_cols") or {}):
            cols[c] = [str(spec["text_cols"][c])] * n
        else:
            cols[c] = [float(x) for x in curve(kind_of(c, spec), n, r)]
    for c in spec.get("plain_cols") or ():  # named with a step word, no count (an episode's `steps`: its length)
        cols[c] = [int(x) for x in _rng(spec).integers(20, 500, n)]
    return cols, steps


def fmt_num(x, spec: dict) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return str(x)
    if spec.get("decimals"):
        return f"{x:.{spec['decimals']}f}"
    if spec.get("sci"):
        return f"{x:e}"
    return repr(float(x))


# ------------------------------------------------------------------ the writers

def write_csv(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    names, n = list(cols), len(next(iter(cols.values())))
    sep = spec.get("sep", ",")
    lines: list[str] = []
    if spec.get("comment_json"):
        lines.append('#{"t_start": 1700000000.5, "env_id": "CartPole-v1"}')
    if spec.get("preamble") == "args":
        lines += ["lr,0.1", "batch_size,128", "epochs,200", "dataset,cifar10", '""']
    if spec.get("preamble") == "lines3":  # free text a script writes before its header (read back with skiprows=3)
        lines += ["model: conv1d_8x", "trained on 2048 samples, validated on 512", "started 2024-05-01 12:00:00"]
    if spec.get("long_format"):
        return _write_long(spec, path, lines)
    if spec.get("lightning"):
        return _write_lightning(spec, path)
    if spec.get("nan_rows"):
        return _write_nan_rows(spec, path)
    if spec.get("epoch_batch"):
        return _write_epoch_batch(spec, path)
    index = spec.get("index")
    header = names if spec.get("header", True) is not None else None
    if header is not None:
        head = ([""] if index == "unnamed" else [index.split(":")[1]] if index and index.startswith("named:") else []) + header
        lines.append(("# " if spec.get("comment_header") else "") + sep.join(head))
    phases = spec.get("phase_col")
    for i in range(n):
        row = [fmt_num(cols[c][i], spec) for c in names]
        if spec.get("step_text") and spec.get("step") in cols:
            row[names.index(spec["step"])] = spec["step_text"] % cols[spec["step"]][i]
        if "time" in (spec.get("text_cols") or {}) and spec["text_cols"]["time"] == "datetime":
            row[names.index("time")] = f"2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d}.123456"
        if spec.get("ragged") and i >= n // 2:
            row[names.index(spec["ragged"])] = ""
        if index:
            row = [str(i)] + row
        if phases:
            for p in phases:
                prow = list(row)
                if p != phases[0]:
                    li = names.index(spec["loss"]) + (1 if index else 0)
                    prow[li] = fmt_num(float(cols[spec["loss"]][i]) * 1.1, spec)
                where = next((k for k, c in enumerate(names) if c.lower() in ("phase", "set_type")), None)
                if where is not None:
                    prow[where + (1 if index else 0)] = p
                    lines.append(sep.join(prow))
                else:  # a headerless row led by its split (`train,0.52,0.81`)
                    lines.append(sep.join([p] + prow[1:]))
            continue
        if spec.get("phase_rows") and i % 5 == 4:  # a validation row: only its own columns
            vrow = [row[0]] + ["val" if c == "phase" else (fmt_num(cols[c][i], spec) if c in ("epoch", "step", "val_loss") else "")
                               for c in names]
            lines.append(sep.join(vrow))
            continue
        if spec.get("phase_rows"):
            row[names.index("phase") + 1] = "train"
            row[names.index("val_loss") + 1] = ""
        if spec.get("batch_and_epoch_rows"):
            lines.append(sep.join(row))
            continue
        lines.append(sep.join(row))
    if spec.get("batch_and_epoch_rows"):  # epoch rows carry val_loss/val_acc, batch rows loss
        lines = _batch_epoch_rows(spec, cols, lines[:1])
    if spec.get("phase_rows"):
        steps = np.array([v for i, v in enumerate(steps) if i % 5 != 4])
    if spec.get("multi_run"):
        body = lines[1:]
        lines = lines[:1] + [ln.replace(ln.split(sep)[0], "1", 1) for ln in body] + \
            [ln.replace(ln.split(sep)[0], "2", 1) for ln in body]
    path.write_text("\n".join(lines) + "\n")
    return steps


def _write_nan_rows(spec: dict, path: Path) -> np.ndarray:
    """A row per logged value, the other loss columns NaN, which `to_csv` writes empty (`[len(data), epoch, samples, train|nan, ...]`)."""
    n, r = points(spec), _rng(spec)
    tr, va = curve("loss", n, r), curve("loss", n, r) * 1.1
    lines, steps, per = [",".join(spec["cols"])], [], 10
    for i in range(n):
        k = len(lines) - 1
        steps.append(k)
        lines.append(f"{k},{i // per},{(i % per) * 64},{float(tr[i])!r},,")
        if i % 5 == 4:
            lines.append(f"{len(lines) - 1},{i // per},{(i % per) * 64},,{float(va[i])!r},")
        if i % per == per - 1:
            lines.append(f"{len(lines) - 1},{i // per},{(i % per) * 64},,,{float(va[i])!r}")
    path.write_text("\n".join(lines) + "\n")
    return np.array(steps)


def _write_epoch_batch(spec: dict, path: Path) -> np.ndarray:
    """A (epoch, batch) index then the loss: the batch counts from 0 again each epoch."""
    n, r, per = points(spec), _rng(spec), int(spec["epoch_batch"])
    sep = spec.get("sep", ",")
    loss = curve("loss", n, r)
    lines = [sep.join(spec["cols"])] + [sep.join((str(i // per), str(i % per), repr(float(loss[i])))) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return np.arange(n)


def _batch_epoch_rows(spec: dict, cols: dict, head: list[str]) -> list[str]:
    lines, n = list(head), len(cols["loss"])
    per = 10
    for i in range(n):
        e, b = i // per + 1, i % per
        lines.append(f"{e},{b},{cols['loss'][i]!r},,,0.5")
        if b == per - 1:
            lines.append(f"{e},,,{cols['val_loss'][i]!r},{cols['val_acc'][i]!r},5.0")
    return lines


def _write_long(spec: dict, path: Path, lines: list[str]) -> np.ndarray:
    n, r = points(spec), _rng(spec)
    sep = spec.get("sep", ",")
    (key, kinds), = [(k, v) for k, v in spec["long_format"].items() if k != "metric"][:1]
    names = spec["cols"]
    lines.append(sep.join(names))
    series = {k: curve("score" if _RISING.search(k) else "loss", n, r) for k in kinds}
    step_col = spec["step"]
    for i in range(n):
        for k in kinds:
            row = []
            for c in names:
                if c == key:
                    row.append(k)
                elif c == step_col:
                    row.append(str(i + 1))
                elif c in ("metric",):
                    row.append(spec["long_format"]["metric"][0])
                elif c in ("Timestamp", "timestamp"):
                    row.append(str(1700000000000 + i * 1000))
                elif c in ("epoch",):
                    row.append(str(i // 10))
                elif c in ("runContext",):
                    row.append("")
                elif c in ("offset",):
                    row.append(str(i * len(kinds)))
                elif c in ("isStart",):
                    row.append("0")
                else:
                    row.append(repr(float(series[k][i])))
            lines.append(sep.join(row))
    path.write_text("\n".join(lines) + "\n")
    return np.arange(1, n + 1)


def _write_lightning(spec: dict, path: Path) -> np.ndarray:
    """Lightning's CSVLogger: a row per logging step, epoch-end rows with the epoch metrics."""
    n, r = points(spec), _rng(spec)
    per = 20
    loss = [float(x) for x in curve("loss", n, r)]
    lines = ["epoch,step,train_loss_step,train_loss_epoch,val_loss"]
    steps = []
    for i in range(n):
        s = 50 * (i + 1) - 1
        steps.append(s)
        lines.append(f"{i // per},{s},{loss[i]!r},,")
        if i % per == per - 1:
            lines.append(f"{i // per},{s},,{float(np.mean(loss[i - per + 1:i + 1]))!r},")
            lines.append(f"{i // per},{s},,,{float(loss[i]) * 1.1!r}")
    path.write_text("\n".join(lines) + "\n")
    return np.array(steps)


def write_savetxt(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    arr = np.column_stack([np.asarray(v, dtype=float) for v in cols.values()])
    if spec.get("transposed"):
        arr = arr.T
    kw = {"delimiter": spec.get("sep", " ")}
    if spec.get("header_comment"):
        kw["header"] = " ".join(cols)
    np.savetxt(path, arr if arr.shape[1] > 1 or spec.get("transposed") else arr[:, 0], **kw)
    return steps


def write_bare(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    path.write_text("".join(f"{v}\n" for v in cols[spec["cols"][0]]))
    return steps


def write_json(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    names, n = list(cols), len(next(iter(cols.values())))
    fmt, layout = spec["fmt"], spec.get("layout")
    indent = spec.get("indent")
    if fmt == "json_dol":
        obj: object = dict(cols)
        for k, v in (spec.get("scalar_fields") or {}).items():
            obj = {k: n, **obj}
    elif fmt == "json_list":
        obj = cols[names[0]]
    elif fmt == "json_lod":
        obj = [{c: cols[c][i] for c in names} for i in range(n)]
    elif fmt == "jsonl":
        return _write_jsonl(spec, path, cols, steps)
    else:
        obj, steps = _nested(spec, cols, steps, layout)
    path.write_text(json.dumps(obj, indent=indent))
    return steps


def _write_jsonl(spec: dict, path: Path, cols: dict, steps: np.ndarray) -> np.ndarray:
    names, n = list(cols), len(next(iter(cols.values())))
    out, r = [], _rng(spec)
    if spec.get("list_values"):  # a record per task, its lists inside
        for t in range(n // 20 or 1):
            out.append(json.dumps({"accs": [float(x) for x in curve("score", 20, r)], "epoch": t,
                                   "losses": [float(x) for x in curve("loss", 20, r)]}, sort_keys=True))
        path.write_text("\n".join(out) + "\n")
        return np.arange(n // 20 or 1)
    if spec.get("layout_jsonl") == "mmdet":
        return _write_mmdet(spec, path, cols)
    splits = spec.get("splits")
    for i in range(n):
        rec = {c: cols[c][i] for c in names if c != "split"}
        if splits:
            out.append(json.dumps({**rec, "split": splits[0]}))
            if i % 10 == 9:
                out.append(json.dumps({**rec, "split": splits[1], spec["loss"]: float(rec[spec["loss"]]) * 1.1}))
            continue
        if spec.get("quoted"):  # numbers written as strings (`str(logs['loss'])`)
            rec = {c: (v if c == spec.get("step") else str(v)) for c, v in rec.items()}
        if spec.get("layout_jsonl") == "rllib_result":  # learner stats nested under info/learner/<policy>
            rec = {**rec, "info": {"learner": {"default_policy": {"learner_stats": {
                "total_loss": float(curve("loss", 1, r)[0]), "vf_loss": float(curve("loss", 1, r)[0]), "entropy": 1.1}}}},
                   "hist_stats": {"episode_reward": [float(x) for x in curve("score", 5, r)]}, "config": {"lr": 5e-5, "env": "CartPole-v0"}}
        out.append(json.dumps(rec))
        for k, every in (spec.get("sparse") or {}).items():
            if i % every == every - 1:
                out.append(json.dumps({spec["step"]: rec.get(spec["step"], i), k: float(curve("score", 1, r)[0])}))
    path.write_text("\n".join(out) + "\n")
    return steps


def _write_mmdet(spec: dict, path: Path, cols: dict) -> np.ndarray:
    """MMDetection's `*.log.json`: an env/config record, then train records (epoch, iter within the
    epoch) and a val record at each epoch's end."""
    n, r = len(cols["loss"]), _rng(spec)
    per = 20
    out = [json.dumps({"env_info": "sys.platform: linux\nPython: 3.7.7", "config": "model = dict(type='RetinaNet')", "seed": 0})]
    steps = []
    for i in range(n):
        e, it = i // per + 1, (i % per + 1) * 50
        rec = {"mode": "train", "epoch": e, "iter": it, **{c: cols[c][i] for c in spec["cols"] if c not in ("epoch", "iter")}}
        out.append(json.dumps(rec))
        steps.append(i)
        if i % per == per - 1:
            out.append(json.dumps({"mode": "val", "epoch": e, "iter": per * 50, "lr": cols["lr"][i], "bbox_mAP": float(curve("score", 1, r)[0])}))
    path.write_text("\n".join(out) + "\n")
    return np.array(steps)


def _nested(spec: dict, cols: dict, steps: np.ndarray, layout: str | None) -> tuple[object, np.ndarray]:
    names, n = list(cols), len(next(iter(cols.values())))
    r = _rng(spec)
    if layout == "hf_trainer_state":
        hist = [{"epoch": round(i / 100, 2), "learning_rate": cols["learning_rate"][i], "loss": round(cols["loss"][i], 4),
                 "step": int(cols["step"][i])} for i in range(n)]
        return {"best_metric": None, "epoch": hist[-1]["epoch"], "global_step": hist[-1]["step"], "log_history": hist}, steps
    if layout == "parlai_trainstats":
        reps = [{c: cols[c][i] for c in names} for i in range(n)]
        return {"parleys": 1000, "train_time": 3600.0, "total_epochs": 3.0, "train_reports": reps,
                "valid_reports": [{"exs": 100, "loss": float(x), "ppl": math.exp(float(x))} for x in curve("loss", 10, r)],
                "best_valid": {"loss": 1.1}}, steps
    if layout == "summary_and_series":
        return {"run_id": "rp_0001", "summary": {c: cols[c][-1] for c in names},
                "time_series": dict(cols), "tags": ["mnist"], "recorded_at": "2025-11-17T12:34:56Z"}, steps
    if layout in ("llm_foundry_run", "run_with_iterations"):
        its = [{c: cols[c][i] for c in names} for i in range(n)]
        return {"run_name": "run_20231031_162345", "config": {"learning_rate": 6e-4, "max_iters": n},
                "training_iterations": its,
                "eval_steps": [{"iter": int(cols["iter"][i]), "train_loss": cols["loss"][i], "val_loss": cols["loss"][i] * 1.05}
                               for i in range(0, n, 50)],
                "summary": {"final_train_loss": cols["loss"][-1]}}, steps
    if layout in ("keyed_by_step", "keyed_iter_string"):
        key = (lambda i: f"iter: {i}") if layout == "keyed_iter_string" else str
        if names == ["loss"]:
            return {key(i): cols["loss"][i] for i in range(n)}, steps
        return {key(i): {c: cols[c][i] for c in names} for i in range(n)}, steps
    if layout == "pandas_to_json_columns":
        return {c: {str(i): cols[c][i] for i in range(n)} for c in names}, steps
    if layout == "split_lists":
        a, b = spec.get("split_names") or ("train", "test")
        return {a: [{c: cols[c][i] for c in names} for i in range(n)],
                b: [{c: (cols[c][i] * 1.1 if c != "epoch" else cols[c][i]) for c in names} for i in range(n)]}, steps
    if layout == "dict_of_fold_lists":
        folds = spec.get("folds", 5)
        return {c: [[float(x) for x in curve(kind_of(c, spec), n, r)] for _ in range(folds)] for c in names}, steps
    if layout == "metric_then_split":
        return {m: {s: [float(x) for x in curve(kind_of(m, spec), n, r)] for s in spec["splits"]} for m in names}, steps
    if layout == "split_then_metric":
        return {s: {m: [float(x) for x in curve("loss" if m != "error" else "score", n, r)] for m in names}
                for s in spec["splits"]}, steps
    if layout == "counter_lists":
        tr = 640 * np.arange(1, n + 1)
        return {"train_counter": [int(x) for x in tr], "train_losses": cols["train_losses"],
                "test_counter": [int(x) for x in tr[:: max(n // 10, 1)]],
                "test_losses": [float(x) for x in curve("loss", len(tr[:: max(n // 10, 1)]), r)]}, tr
    if layout == "loss_list_plus_epoch_maps":
        return {"loss": cols["loss"], "evals": {str(e): {"acc": 0.5 + e / 100} for e in range(10)},
                "epoch_metrics": {str(e): {"val_loss": 1.0 - e / 20} for e in range(10)}}, steps
    if layout == "model_comparisons":
        return {"logs": [{"timestamp": f"2024-05-{i + 1:02d} 12:00:00", "winner": "New Model",
                          "new_model": {c: cols[c][i] for c in names}, "old_model": {c: cols[c][i] * 1.1 for c in names}}
                         for i in range(n)]}, steps
    if layout == "skorch_history":
        out = []
        for i in range(n):
            rec = {c: cols[c][i] for c in names}
            rec["batches"] = [{"train_loss": float(x), "train_batch_size": 128} for x in curve("loss", 4, r)] + \
                [{"valid_loss": float(cols["valid_loss"][i]), "valid_batch_size": 128}]
            rec["train_loss_best"] = bool(i == 0 or cols["train_loss"][i] < min(cols["train_loss"][:i]))
            rec["valid_loss_best"] = bool(i == 0 or cols["valid_loss"][i] < min(cols["valid_loss"][:i]))
            out.append(rec)
        return out, steps
    if layout == "ludwig_stats":
        feat = spec.get("feature", "label")

        def part(scale: float) -> dict:
            per = {c: [float(x) * (scale if kind_of(c, spec) == "loss" else 1) for x in cols[c]] for c in names}
            return {"combined": {"loss": per["loss"]}, feat: per}
        return {"training": part(1.0), "validation": part(1.1), "test": part(1.15)}, steps
    if layout == "named_record_lists":
        return {"round_stats": [{"duration": 12.5, "loss": float(x)} for x in curve("loss", n * 3, r)],
                "epoch_stats": [{c: cols[c][i] for c in names} for i in range(n)]}, steps
    if layout == "model_feature_folds":
        folds = spec.get("folds", 5)
        return {"CNN": {"mfcc": [{c: [float(x) for x in curve(kind_of(c, spec), n, r)] for c in names} for _ in range(folds)]}}, steps
    if layout == "records_of_lists":
        return [{"learning_rates": [float(x) for x in curve("lr", 10, r)], "frame": None,
                 "losses": [float(x) for x in curve("loss", 10, r)]} for _ in range(n)], steps
    if layout == "tfjs_history":
        return {"validationData": None, "params": {"epochs": n, "initialEpoch": 0, "samples": 6000, "steps": None,
                "batchSize": 32, "verbose": 1, "doValidation": True, "metrics": names},
                "epoch": list(range(n)), "history": {c: cols[c] for c in names}}, steps
    if layout == "epoch_and_losses":
        return {"startedTime": 1700000000000, "finishedTime": 1700003600000, "epoch": list(range(1, n + 1)),
                "losses": {c: cols[c] for c in names}}, steps
    one = np.arange(1, n + 1)
    if layout == "split_epoch_records":  # metrics[split][epoch] = {metric: value}
        return {s: {str(int(steps[i])): {c: cols[c][i] * (1.1 if k else 1.0) for c in names} for i in range(n)}
                for k, s in enumerate(spec["splits"])}, steps
    if layout == "xy_legend":  # visdom line data: X, Y rows (one value per legend entry)
        return {"X": [int(x) for x in one], "Y": [[cols[c][i] for c in names] for i in range(n)], "legend": names}, one
    if layout == "plotly_window":  # visdom get_window_data: content.data[i] = {x, y, name}
        xs = [int(x) for x in 10 * one]
        return {"id": "det_loss_iteration", "title": "loss", "command": "window", "type": "plot",
                "content": {"data": [{"x": xs, "y": cols[c], "name": c, "type": "scatter", "mode": "lines"} for c in names],
                            "layout": {"title": "loss", "xaxis": {"title": "iteration"}}}}, 10 * one
    if layout == "name_step_pairs":  # emmental: {name: [[step, value], ...]}
        return {c: [[int(10 * (i + 1)), cols[c][i]] for i in range(n)] for c in names}, 10 * one
    if layout == "sacred_metrics":
        return {c: {"steps": list(range(n)), "timestamps": [f"2024-05-01T12:{i // 60 % 60:02d}:{i % 60:02d}.000000" for i in range(n)],
                    "values": cols[c]} for c in names}, np.arange(n)
    if layout == "pairs_list":
        return [[cols[names[0]][i], cols[names[1]][i]] for i in range(n)], steps
    if layout == "ts_mates":  # each list beside its timesteps: train_losses / train_losses_ts
        every = max(n // 10, 1)
        return {"train_losses": cols[names[0]], "train_losses_ts": [int(x) for x in 100 * one],
                "val_losses": cols[names[1]][every - 1::every], "val_losses_ts": [int(x) for x in (100 * one)[every - 1::every]]}, 100 * one
    if layout == "pandas_split":
        return {"columns": names, "index": list(range(n)), "data": [[cols[c][i] for c in names] for i in range(n)]}, np.arange(n)
    if layout == "pandas_table":
        return {"schema": {"fields": [{"name": "index", "type": "integer"}] + [{"name": c, "type": "number"} for c in names],
                           "primaryKey": ["index"], "pandas_version": "1.4.0"},
                "data": [{"index": i, **{c: cols[c][i] for c in names}} for i in range(n)]}, np.arange(n)
    if layout == "tb_triples":
        return [[1700000000.0 + 3.5 * i, int(10 * i), cols[names[0]][i]] for i in range(n)], 10 * np.arange(n)
    if layout == "keyed_epoch_prefix":
        return {f"epoch_{i + 1}": {c: cols[c][i] for c in names} for i in range(n)}, one
    if layout == "records_split_nested":
        return {"epochs": [{"epoch": i + 1, **{s: {c: cols[c][i] * (1.1 if k else 1.0) for c in names}
                                              for k, s in enumerate(spec["splits"])}} for i in range(n)]}, one
    raise ValueError(f"{spec['id']}: no renderer for layout {layout!r}")


def write_raw(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    n = len(next(iter(cols.values())))
    names = list(cols)
    if spec.get("glued_header"):
        path.write_text("#t,r" + "".join(f"{cols['t'][i]},{cols['r'][i]}\n" for i in range(n)))
    elif spec.get("no_newline"):
        path.write_text("".join(",".join(fmt_num(cols[c][i], {}) for c in names) for i in range(n)))
    elif spec.get("name_then_row"):
        path.write_text(f"{names[0]} loss: \n" + " ".join(repr(v) for v in cols[names[0]]) + "\n")
    elif spec.get("double_encoded"):
        path.write_text(json.dumps(json.dumps(str(cols[names[0]]))))
    elif spec.get("one_row"):  # every value on one line (`writer.writerow(history)`)
        path.write_text(spec["one_row"].join(repr(v) for v in cols[names[0]]) + "\n")
    elif spec.get("double_tab"):  # `str(epoch) + '\t' + '\t' + value`, under a one-tab header
        path.write_text("\t".join(names) + "\n" + "".join(f"{cols[names[0]][i]}\t\t{cols[names[1]][i]:.6f}\n" for i in range(n)))
    elif spec.get("glued_pipes"):
        path.write_text("\nresnet - 01/05/2024 10:00:00\n" + "".join(f"{cols['epoch'][i]}-{cols['loss'][i]:.4f} | " for i in range(n)))
    else:
        raise ValueError(spec["id"])
    return steps


def write_pickle(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    path.write_bytes(pickle.dumps(cols))
    return steps


def write_yaml(spec: dict, path: Path) -> np.ndarray:
    import yaml

    cols, steps = table(spec)
    if spec["fmt"] == "yaml_summary":
        path.write_text(yaml.safe_dump({c: cols[c][-1] for c in cols}))
    else:
        n = len(next(iter(cols.values())))
        # a record appended an epoch: `lines[0] = "\n-" + lines[0][1:]`, then "\n".join(lines) (no blank lines)
        path.write_text("".join("\n- " + "\n".join(f"{'' if j == 0 else '  '}{c}: {cols[c][i]}"
                                                   for j, c in enumerate(cols)) for i in range(n)))
    return steps


def write_blocks(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    path.write_text("".join(f"{c}\n" + "".join(f"{v}\n" for v in cols[c]) + "\n" for c in cols))
    return steps


def write_r_history(spec: dict, path: Path) -> np.ndarray:
    """R keras: `write.csv(as.data.frame(history))`, a row per (epoch, metric, data) with quoted row names."""
    n, r = points(spec), _rng(spec)
    lines, k = ['"","epoch","value","metric","data"'], 0
    for data, scale in (("training", 1.0), ("validation", 1.1)):
        for m in spec["cols"]:
            kind = kind_of(m, spec)
            v = curve(kind, n, r) * (scale if kind == "loss" else 1.0)
            for i in range(n):
                k += 1
                lines.append(f'"{k}",{i + 1},{float(v[i])!r},"{m}","{data}"')
    path.write_text("\n".join(lines) + "\n")
    return np.arange(1, n + 1)


def write_split_csvs(spec: dict, path: Path) -> np.ndarray:
    """A CSV per data split in one folder (catalyst's CSVLogger: train.csv, valid.csv)."""
    cols, steps = table(spec)
    path.mkdir()
    for k, split in enumerate(spec["splits"]):
        rows = [",".join(cols)] + [",".join(fmt_num(cols[c][i] * (1.1 if k and kind_of(c, spec) == "loss" else 1), spec)
                                            if not isinstance(cols[c][i], int) else str(cols[c][i]) for c in cols)
                                   for i in range(len(steps))]
        path.joinpath(f"{split}.csv").write_text("\n".join(rows) + "\n")
    return steps


def write_dvclive(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    if spec.get("flat"):  # dvclive 0.x: <dir>/<metric>.tsv, `timestamp step <name>`
        for c in spec["cols"]:
            path.joinpath(f"{c}.tsv").write_text(f"timestamp\tstep\t{c}\n" + "".join(
                f"{1700000000000 + i}\t{i}\t{v!r}\n" for i, v in enumerate(cols[c])))
        return np.arange(len(steps))
    for c in spec["cols"]:
        f = path / "plots" / "metrics" / f"{c}.tsv"
        f.parent.mkdir(parents=True, exist_ok=True)
        name = c.split("/")[-1]
        f.write_text(f"timestamp\tstep\t{name}\n" + "".join(f"{1700000000000 + i}\t{i}\t{v!r}\n" for i, v in enumerate(cols[c])))
    (path / "metrics.json").write_text(json.dumps({"train": {"loss": cols[spec["cols"][0]][-1]}, "step": len(steps) - 1}))
    return np.arange(len(steps))


def write_mlflow(spec: dict, path: Path) -> np.ndarray:
    """MLflow's file store: mlruns/<experiment>/<run>/metrics/<key>, lines `timestamp value step`."""
    cols, steps = table(spec)
    run = path / "0" / "4f1b2c3d5e6f7a8b9c0d1e2f3a4b5c6d"
    (run / "metrics").mkdir(parents=True)
    (run / "meta.yaml").write_text("artifact_uri: file:///tmp/mlruns/0/4f1b/artifacts\nstatus: 3\n")
    (path / "0" / "meta.yaml").write_text("experiment_id: '0'\nname: Default\n")
    for c in spec["cols"]:
        (run / "metrics" / c).write_text("".join(f"{1700000000000 + 1000 * i} {v!r} {i}\n" for i, v in enumerate(cols[c])))
    return np.arange(len(steps))


def write_catboost(spec: dict, path: Path) -> np.ndarray:
    """CatBoost's train dir: learn_error.tsv and test_error.tsv (`iter` then the metrics), time_left.tsv."""
    cols, steps = table(spec)
    n = len(steps)
    head = "iter\t" + "\t".join(spec["cols"]) + "\n"
    path.mkdir()
    for name, scale in (("learn_error.tsv", 1.0), ("test_error.tsv", 1.1)):
        path.joinpath(name).write_text(head + "".join(
            f"{i}\t" + "\t".join(repr(cols[c][i] * (scale if kind_of(c, spec) == "loss" else 1)) for c in spec["cols"]) + "\n" for i in range(n)))
    path.joinpath("time_left.tsv").write_text("iter\tPassed\tRemaining\n" + "".join(f"{i}\t{i * 12}\t{(n - i) * 12}\n" for i in range(n)))
    return np.arange(n)


def write_allennlp(spec: dict, path: Path) -> np.ndarray:
    """AllenNLP's serialization dir: metrics_epoch_<N>.json per epoch, each the epoch's metrics plus the best so far."""
    cols, steps = table(spec)
    n = len(steps)
    path.mkdir()
    path.joinpath("config.json").write_text(json.dumps({"trainer": {"num_epochs": n, "patience": 10}}))
    best = 0
    for i in range(n):
        if cols["validation_loss"][i] < cols["validation_loss"][best]:
            best = i
        rec = {"best_epoch": best, "peak_worker_0_memory_MB": 3021.5, "training_duration": f"0:0{i % 10}:12.5",
               "epoch": i, **{c: cols[c][i] for c in spec["cols"]},
               **{f"best_{c}": cols[c][best] for c in spec["cols"] if c.startswith("validation_")}}
        path.joinpath(f"metrics_epoch_{i}.json").write_text(json.dumps(rec, indent=2))
    return np.arange(n)


def write_split_files(spec: dict, path: Path) -> np.ndarray:
    """One file per series (`np.savetxt('loss.csv', history['loss'], delimiter=',')`), named for it."""
    cols, steps = table(spec)
    path.mkdir()
    for c in spec["cols"]:
        np.savetxt(path / f"{c}.csv", np.asarray(cols[c], dtype=float), delimiter=",")
    return steps


def _g(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def write_toml_dir(spec: dict, path: Path) -> np.ndarray:
    """A TOML snapshot file per logged step (`metrics/step_00000100.toml`)."""
    cols, steps = table(spec)
    path.mkdir()
    for i, s in enumerate(steps):
        path.joinpath(f"step_{int(s):08d}.toml").write_text("".join(f"{c} = {cols[c][i]!r}\n" for c in cols))
    return steps


def write_toml_aot(spec: dict, path: Path) -> np.ndarray:
    cols, steps = table(spec)
    n = len(steps)
    path.write_text("".join("[[epoch]]\n" + "".join(f"{c} = {cols[c][i]!r}\n" for c in cols) + "\n" for i in range(n)))
    return steps


def write_strings(spec: dict, path: Path) -> np.ndarray:
    """Values written as strings: `json.dump(history, default=str)`, an exported HF log, fairseq's JSON lines."""
    cols, steps = table(spec)
    names, n = list(cols), len(steps)
    fmt = spec["fmt"]
    if fmt == "json_dol_str":
        path.write_text(json.dumps({c: [str(np.float32(v)) for v in cols[c]] for c in names}))
    elif fmt == "json_lod_str":
        path.write_text(json.dumps([{c: str(cols[c][i]) for c in names} for i in range(n)], indent=spec.get("indent")))
    else:  # jsonl_allstr: every number through '{:g}', the update counter too
        path.write_text("".join(json.dumps({c: _g(cols[c][i]) for c in names}) + "\n" for i in range(n)))
    return steps


def write_csv_padded(spec: dict, path: Path) -> np.ndarray:
    """YOLOv5's results.csv: every header and value right-aligned in 20 characters."""
    cols, steps = table(spec)
    names, n = list(cols), len(steps)
    lines = [",".join(f"{c:>20s}" for c in names)] + [",".join(f"{cols[c][i]:20.5g}" for c in names) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return steps


def write_yaml_dol(spec: dict, path: Path) -> np.ndarray:
    import yaml

    cols, steps = table(spec)
    path.write_text(yaml.safe_dump({c: list(v) for c, v in cols.items()}))
    return steps


def write_meanstats(spec: dict, path: Path) -> np.ndarray:
    """StyleGAN2-ADA's stats.jsonl: each metric a `{num, mean, std}` object, a line per tick."""
    cols, steps = table(spec)
    n = len(steps)
    path.write_text("".join(json.dumps({**{c: {"num": 1 if c.startswith("Progress") else 64, "mean": float(cols[c][i]),
                                                "std": 0.0 if c.startswith("Progress") else 0.01} for c in cols},
                                        "timestamp": 1700000000.0 + 60 * i}) + "\n" for i in range(n)))
    return steps


WRITERS = {"csv": write_csv, "savetxt": write_savetxt, "bare": write_bare, "json_dol": write_json,
           "json_list": write_json, "json_lod": write_json, "jsonl": write_json, "json_nested": write_json,
           "raw": write_raw, "pickle": write_pickle, "yaml_summary": write_yaml, "yaml_list": write_yaml,
           "blocks": write_blocks, "dvclive": write_dvclive, "mlflow": write_mlflow, "catboost": write_catboost,
           "allennlp": write_allennlp, "split_files": write_split_files,
           "toml_dir": write_toml_dir, "toml_aot": write_toml_aot, "json_dol_str": write_strings,
           "json_lod_str": write_strings, "jsonl_allstr": write_strings, "csv_padded": write_csv_padded,
           "yaml_dol": write_yaml_dol, "jsonl_meanstats": write_meanstats, "r_history": write_r_history,
           "split_csvs": write_split_csvs}


def render(spec: dict, root: Path) -> tuple[Path, np.ndarray]:
    """The file (or folder) the writer leaves, under a folder of its own; the expected steps."""
    folder = root / spec["id"]
    folder.mkdir(parents=True)
    path = folder / spec["file"]
    if spec["fmt"] in ("dvclive", "mlflow"):
        path.mkdir()
    return path, WRITERS[spec["fmt"]](spec, path)


# ------------------------------------------------------------------ reading and judging

def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def same_metric(expected: str, metric: str) -> bool:
    a = _norm(expected.split(".")[-1] if "." in expected and "/" not in expected else expected)
    b = _norm(re.sub(r"/\d+$", "", str(metric)))  # a fold or seed numbered after the name
    return bool(a) and bool(b) and (a == b or b.endswith(a) or a.endswith(b))


def judge(spec: dict, path: Path, steps: np.ndarray) -> tuple[str, str]:
    """(outcome, detail) for one rendered file."""
    from spikelens import api
    from spikelens.errors import SpikelensError
    from spikelens.frame import roles_of
    from spikelens.stitching import main_metric

    readable = spec.get("readable", True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            err = io.StringIO()
            stderr, sys.stderr = sys.stderr, err
            try:
                runs = api.load_runs(path.parent)
            finally:
                sys.stderr = stderr
    except SpikelensError as e:
        return ("refused (right)" if not readable else "refused"), str(e).splitlines()[0][:160]
    except Exception as e:  # noqa: BLE001 - a crash is an outcome the benchmark reports
        return "crashed", f"{type(e).__name__}: {e}"[:160]
    runs = [r for r in runs if r.frame.height]
    if not runs:
        said = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        return ("refused (right)" if not readable else "refused"), (said[-1] if said else "nothing read")[:160]
    judged = []
    for run in runs:
        roles = roles_of(run.frame)
        main = judged_metric(run) or main_metric(run.frame, roles)
        judged.append((run, main, roles.get(main)))
    if not readable:
        return "read (not a curve)", ", ".join(f"{m}" for _, m, _ in judged)[:160]
    if not any(role in JUDGED for _, _, role in judged):
        return "refused", f"no loss-like metric: main {judged[0][1]!r} is {judged[0][2]}"
    expected = expected_names(spec, path)
    hit = [(run, m, role) for run in runs for m, role in roles_of(run.frame).items()
           if any(same_metric(e, m) for e in expected)]
    if not hit:
        return "wrong loss", f"{expected[0]!r} not among {sorted({m for r in runs for m in roles_of(r.frame)})[:8]}"
    if not any(role in JUDGED for _, _, role in hit):
        return "wrong role", f"{hit[0][1]!r} read as {hit[0][2]}"
    mains = {(id(run), m) for run, m, _ in judged}
    good = [h for h in hit if h[2] in JUDGED]  # the run's main first: a writer of several losses may be judged by any
    run, m, _ = next((h for h in good if (id(h[0]), h[1]) in mains), good[0])
    got = run.frame.filter(run.frame["metric"] == m).sort("seq")["step"].to_numpy()
    if spec.get("step") in ("row", "key") or "+" in str(spec.get("step")) or spec.get("multi_run") or spec.get("restart_concat"):
        ok = len(got) > 1 and bool(np.all(np.diff(got) >= 0))
    else:
        want = np.asarray(steps)
        ok = len(got) == len(want) and bool(np.array_equal(np.sort(got), np.sort(want)))
    if not ok:
        return "wrong step", f"{m}: steps {got[:4].tolist()}..{got[-2:].tolist()} ({len(got)}) vs {np.asarray(steps)[:4].tolist()}.. ({len(steps)})"
    chosen = any(mm == m for _, mm, _ in judged)
    return ("read" if chosen else "read (not main)"), m


def judged_metric(run) -> str | None:
    """The metric `analyze` judges the run by (`RunContext.judged`: an RL learner's return over its
    losses, a GAN's generator), on the stitched run as `analyze` sees it; None where that fails."""
    try:
        from spikelens.detect.base import RunContext
        from spikelens.detect.engine import series_of
        from spikelens.frame import roles_of
        from spikelens.stitching import stitch_run

        frame = stitch_run(run).frame
        roles = roles_of(frame)
        main = RunContext(run=run.name, roles=roles, series=series_of(frame, roles), frame=frame).judged()
        return main.metric if main is not None else None
    except Exception:  # noqa: BLE001 - the benchmark falls back on the stitcher's choice
        return None


def expected_names(spec: dict, path: Path) -> list[str]:
    """The names the writer's loss may be read under: its own, the aliases a reader gives it (SB3's
    `r` is `episode/reward`), `<file>_column<k>` for a file without a header (the file names it),
    and for a run of several loss terms and no total, any of them."""
    names = [spec["loss"], *spec.get("alias", [])]
    if spec.get("header", True) is None or spec["fmt"] in ("savetxt", "bare", "json_list", "raw"):
        k = spec["cols"].index(spec["loss"]) + 1
        names += [f"{path.stem}_column{k}", f"column{k}", f"{path.stem}_row{k}", path.stem]
    if spec.get("multi_loss"):
        names += [c for c in spec["cols"] if kind_of(c, spec) == "loss"]
    return names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--split", choices=("tune", "check", "all"), default="all")
    ap.add_argument("--only", nargs="*", help="writer ids")
    ap.add_argument("--show", action="store_true", help="print every file that was not read right")
    ap.add_argument("--out", type=Path, help="write the per-writer outcomes as JSON")
    args = ap.parse_args()
    if not args.corpus.exists():
        print(f"{args.corpus}: no writer corpus (see the docstring)", file=sys.stderr)
        return 2
    specs = [json.loads(ln) for ln in args.corpus.read_text().splitlines() if ln.strip()]
    specs = [s for s in specs if (args.split == "all" or s["split"] == args.split) and (not args.only or s["id"] in args.only)]
    results = []
    with tempfile.TemporaryDirectory(prefix="spikelens-writers-") as tmp:
        for spec in specs:
            try:
                path, steps = render(spec, Path(tmp))
            except Exception as e:  # noqa: BLE001
                results.append({"id": spec["id"], "split": spec["split"], "outcome": "not rendered", "detail": repr(e)[:160]})
                continue
            outcome, detail = judge(spec, path, steps)
            results.append({"id": spec["id"], "split": spec["split"], "repo": spec.get("repo"), "file": spec["file"],
                            "readable": spec.get("readable", True), "outcome": outcome, "detail": detail})
    for split in ("tune", "check"):
        part = [r for r in results if r["split"] == split]
        if not part:
            continue
        readable = [r for r in part if r.get("readable", True)]
        good = sum(r["outcome"].startswith("read") and r["outcome"] != "read (not a curve)" for r in readable)
        main = sum(r["outcome"] == "read" for r in readable)
        right_refusals = sum(r["outcome"] == "refused (right)" for r in part if not r.get("readable", True))
        c = Counter(r["outcome"] for r in part)
        print(f"{split}: {len(part)} writers; readable read right {good}/{len(readable)} "
              f"({100 * good / max(len(readable), 1):.1f}%), as the main metric {main}; not-a-curve refused {right_refusals}/{len(part) - len(readable)}; "
              + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    if args.show:
        for r in results:
            if not r["outcome"].startswith("read") or r["outcome"] == "read (not a curve)":
                print(f"  {r['id']} [{r['split']}] {r.get('file')}: {r['outcome']}: {r['detail']}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
