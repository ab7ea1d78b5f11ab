"""More writer shapes for `format_writers.py` (session 15's harvest), run the same way.

Session 15's corpus adds writers whose files `format_writers.py` has no renderer for: x/y curve dumps
(visdom/plotly windows, `{"X": .., "Y": .., "legend": ..}`, `[[step, value], ...]`, TensorBoard's JSON
download, Sacred's `metrics.json`), records keyed `epoch_N` or nested by split inside each epoch, pandas
`to_json(orient="split"|"table")`, values written as strings (`default=str`, fairseq's JSON lines),
YOLOv5's padded CSV, StyleGAN's `stats.jsonl` (`{"num", "mean", "std"}` per metric), YAML dict of lists,
TOML (an array of tables; a snapshot file per step), and step columns counted in env steps, frames,
samples (the `step_values: "xK"` knob). This module registers those renderers into `format_writers`
and runs its `main()`, so every writer of the corpus is read and judged the same way.

    python benchmarks/format_writers_ext.py [--split tune|check|all] [--show] [--out FILE]
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import format_writers as fw  # noqa: E402

_base_step_values = fw.step_values
_base_table = fw.table


def table(spec: dict):
    """`plain_cols`: columns named with a step word that hold no count (an episode's `steps`, its length)."""
    cols, steps = _base_table(spec)
    for c in spec.get("plain_cols") or ():
        n = len(cols[c])
        cols[c] = [int(x) for x in fw._rng(spec).integers(20, 500, n)]
    return cols, steps
_base_nested = fw._nested


def step_values(name: str, n: int, spec: dict) -> np.ndarray:
    """`step_values: "x2048"`: the writer's step column counts in units of 2048 (env steps, frames)."""
    k = str(spec.get("step_values") or "")
    if name == spec.get("step") and k.startswith("x"):
        return int(k[1:]) * np.arange(1, n + 1)
    return _base_step_values(name, n, spec)


def _nested(spec: dict, cols: dict, steps: np.ndarray, layout: str | None):
    names, n = list(cols), len(next(iter(cols.values())))
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
    return _base_nested(spec, cols, steps, layout)


def _g(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else str(x)


def write_toml_dir(spec: dict, path: Path) -> np.ndarray:
    """A TOML snapshot file per logged step (`metrics/step_00000100.toml`)."""
    cols, steps = fw.table(spec)
    path.mkdir()
    for i, s in enumerate(steps):
        path.joinpath(f"step_{int(s):08d}.toml").write_text("".join(f"{c} = {cols[c][i]!r}\n" for c in cols))
    return steps


def write_toml_aot(spec: dict, path: Path) -> np.ndarray:
    cols, steps = fw.table(spec)
    n = len(steps)
    path.write_text("".join("[[epoch]]\n" + "".join(f"{c} = {cols[c][i]!r}\n" for c in cols) + "\n" for i in range(n)))
    return steps


def write_strings(spec: dict, path: Path) -> np.ndarray:
    """Values written as strings: `json.dump(history, default=str)`, an exported HF log, fairseq's JSON lines."""
    cols, steps = fw.table(spec)
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
    cols, steps = fw.table(spec)
    names, n = list(cols), len(steps)
    lines = [",".join(f"{c:>20s}" for c in names)] + [",".join(f"{cols[c][i]:20.5g}" for c in names) for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return steps


def write_yaml_dol(spec: dict, path: Path) -> np.ndarray:
    import yaml

    cols, steps = fw.table(spec)
    path.write_text(yaml.safe_dump({c: list(v) for c, v in cols.items()}))
    return steps


def write_meanstats(spec: dict, path: Path) -> np.ndarray:
    """StyleGAN2-ADA's stats.jsonl: each metric a `{num, mean, std}` object, a line per tick."""
    cols, steps = fw.table(spec)
    n = len(steps)
    path.write_text("".join(json.dumps({**{c: {"num": 1 if c.startswith("Progress") else 64, "mean": float(cols[c][i]),
                                                "std": 0.0 if c.startswith("Progress") else 0.01} for c in cols},
                                        "timestamp": 1700000000.0 + 60 * i}) + "\n" for i in range(n)))
    return steps


fw.step_values = step_values
fw.table = table
fw._nested = _nested
fw.WRITERS.update({"toml_dir": write_toml_dir, "toml_aot": write_toml_aot, "json_dol_str": write_strings,
                   "json_lod_str": write_strings, "jsonl_allstr": write_strings, "csv_padded": write_csv_padded,
                   "yaml_dol": write_yaml_dol, "jsonl_meanstats": write_meanstats})

if __name__ == "__main__":
    sys.exit(fw.main())
