"""W&B exports: chart CSVs, history dumps (CSV/Parquet/JSONL), legacy run folders.

Expected values come from the fixture writer (`fixtures/writers/wandb_exports.py`).
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, load, ls_without_writing, metric, run_cli, written_hashes
from spikelens.importers import wandb_exports
from spikelens.importers.base import read_head
from spikelens.importers.csvlogs import CsvImporter
from spikelens.importers.registry import IMPORTERS
from spikelens.importers.wandb_exports import WandbChartCsvImporter, split_header

sys.path.insert(0, str(FIXTURES))
from writers import wandb_exports as W  # noqa: E402

WB = FIXTURES / "wandb_exports"


def by_name(runs):
    return {r.name: r for r in runs}


def test_fixtures_are_what_the_writer_writes(tmp_path):
    # the history dumps are written by pandas (a test extra), as users save run.history()
    W.make(tmp_path)
    assert written_hashes(tmp_path / "wandb_exports") == written_hashes(WB)


@pytest.mark.parametrize("header, want", [
    ("brisk-fog-20 - train/loss", ("brisk-fog-20", "train/loss", None)),
    ("lr 3e-4 - long warmup - lr__MAX", ("lr 3e-4 - long warmup", "lr", "MAX")),
    ("Group: sweep-a - train/loss__MIN", ("Group: sweep-a", "train/loss", "MIN")),
    ("Step", None),
])
def test_header_split_on_the_last_separator(header, want):
    assert split_header(header) == want


def test_chart_files_of_one_folder_join_into_runs_by_display_name():
    runs, warnings = load(WB / "chart")
    runs = by_name(runs)
    assert set(runs) == set(W.RUNS)
    for name in W.RUNS:
        run = runs[name]
        want = W.chart_series(name)
        assert set(run.frame["metric"]) == {"train/loss", "lr"}  # no __MIN/__MAX metrics
        assert len(run.segments) == 1 and len(run.sources) == 2
        loss = metric(run, "train/loss")
        assert loss["step"].to_list() == want["step"].tolist()  # empty cells of the shorter run are not points
        np.testing.assert_array_equal(metric(run, "lr")["value"].to_numpy(), want["lr"])
    nan = metric(runs[W.RUNS[0]], "train/loss").filter(pl.col("value").is_nan())["step"].to_list()
    assert nan == [W.CHART_NAN_STEP]
    assert warnings == []


def test_chart_run_keys_and_names():
    tables = WandbChartCsvImporter().read(next((WB / "chart").glob("*.csv")))
    assert {t.run_name for t in tables} == set(W.RUNS)
    assert {t.run_key for t in tables} == {f"wandb-export:{WB / 'chart'}:{r}" for r in W.RUNS}
    assert all(t.segment_key == t.run_key for t in tables)


def test_custom_x_axis_uses_the_run_step_and_keeps_epoch():
    (run,), _ = load(WB / "chart_epoch")
    want = W.chart_series(W.RUNS[0])
    assert metric(run, "train/loss")["step"].to_list() == want["step"][::20].tolist()
    assert metric(run, "epoch")["value"].to_list() == [float(s // 400) for s in want["step"][::20]]


def test_sampled_chart_export_warns():
    (run,), warnings = load(WB / "chart_sampled")
    assert run.frame.height == 500
    (w,) = [w for w in warnings if "sampled" in w]
    assert "500 rows" in w and "bucket" in w and "uneven" in w


def test_grouped_panel_is_one_run_named_after_the_group():
    (run,), _ = load(WB / "chart_group")
    assert run.name == "Group: sweep-a"


def test_chart_export_is_claimed_before_the_generic_csv_importer():
    path = next((WB / "chart").glob("*.csv"))
    head = read_head(path)
    assert WandbChartCsvImporter().claims(path, head)
    assert not CsvImporter().claims(path, head)


def test_scan_history_jsonl_keeps_bare_nan_and_infinity_and_flattens_nested_keys():
    (run,), _ = load(WB / "history" / "jsonl")
    rows = W.history_rows()
    loss = metric(run, "train/loss")
    assert loss.height == len(rows)
    assert math.isnan(loss.filter(pl.col("step") == W.HISTORY_NAN_STEP)["value"][0])
    assert loss.filter(pl.col("step") == W.HISTORY_INF_STEP)["value"][0] == math.inf
    assert set(run.frame["metric"]) == {"train/loss", "train/lr", "grad.norm", "eval/loss"}  # no phase, media, _runtime
    np.testing.assert_array_equal(metric(run, "grad.norm")["value"].to_numpy(), [r["grad"]["norm"] for r in rows])
    np.testing.assert_allclose(loss["wall_time"].to_numpy(), [r["_timestamp"] for r in rows])


@pytest.mark.parametrize("sub", ["csv", "parquet"])
def test_pandas_history_dumps_lose_nan_but_keep_the_rest(sub):
    (run,), _ = load(WB / "history" / sub)
    rows = W.history_rows()
    loss = metric(run, "train/loss")
    # pandas writes NaN as an empty CSV cell and pyarrow stores it as null: not logged
    assert W.HISTORY_NAN_STEP not in loss["step"].to_list()
    assert loss.filter(pl.col("step") == W.HISTORY_INF_STEP)["value"][0] == math.inf
    assert loss.height == len(rows) - 1
    assert set(run.frame["metric"]) == {"train/loss", "train/lr", "grad.norm", "eval/loss"}  # no index column
    assert metric(run, "eval/loss")["step"].to_list() == [r["_step"] for r in rows if "eval/loss" in r]


def test_histories_with_a_run_id_column_split_into_runs():
    runs, _ = load(WB / "histories")
    runs = by_name(runs)
    assert set(runs) == {"abc123xy", "def456zw"}
    want = [r["train/loss"] for r in W.history_rows(seed=2, n=50)]
    np.testing.assert_array_equal(metric(runs["def456zw"], "train/loss")["value"].to_numpy(), want)


def test_history_of_exactly_500_rows_warns_it_is_sampled():
    _, warnings = load(WB / "history_500")
    assert any("500 rows" in w and "scan_history" in w for w in warnings)


def test_legacy_run_folder_is_one_run_with_config_in_meta():
    (run,), _ = load(WB / "legacy")
    rows = W.history_rows(seed=0, n=60)
    assert run.name == "legacy-run-1" and run.formats == ["wandb_legacy"]
    assert metric(run, "train/loss")["step"].to_list() == [r["_step"] for r in rows]
    assert run.meta["config.lr"] == "0.0003" and run.meta["wandb.run_id"] == "lg4cy001"
    assert all(s.endswith("wandb-history.jsonl") for s in run.sources)  # events/summary are not read as runs


def test_truncated_jsonl_keeps_complete_lines():
    (run,), warnings = load(WB / "damaged" / "truncated.jsonl")
    assert metric(run, "train/loss")["step"].to_list() == list(range(19))
    assert any("cut short" in w for w in warnings)


def test_lines_that_are_not_json_objects_are_skipped_with_warnings():
    (run,), warnings = load(WB / "damaged" / "bad_lines.jsonl")
    assert metric(run, "train/loss")["step"].to_list() == list(range(10))
    assert any("not JSON" in w for w in warnings)


def test_header_only_chart_export_warns_and_gives_no_run():
    runs, warnings = load(WB / "damaged" / "header_only")
    assert runs == [] and any("header only" in w for w in warnings)


def test_runs_table_export_is_not_a_history():
    path = WB / "not_exports" / "wandb_export_runs.csv"
    assert not any(imp.claims(path, read_head(path)) for imp in IMPORTERS if not imp.claims_dirs)
    res = run_cli("ls", path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_cli_reads_exports_without_writing_into_them(tmp_path):
    names = {r["run"]: r for r in ls_without_writing(WB, tmp_path, "chart", "legacy")}
    assert set(names) == {*W.RUNS, "legacy-run-1"}
    assert names[W.RUNS[0]]["metrics"] == {"train/loss": "loss", "lr": "lr"}


def test_wide_history_rows_with_step_last_are_claimed(tmp_path):
    row = {f"layer_{i:03d}/grad_norm": 0.5 for i in range(300)}
    path = tmp_path / "scan.jsonl"
    path.write_text("".join(json.dumps({**row, "_runtime": 1.0, "_step": s}) + "\n" for s in range(3)))
    (run,), _ = load(path)
    assert run.formats == ["wandb_history"] and run.frame.height == 900


_KINDS = {
    "int": st.integers(-10 ** 6, 10 ** 6),
    "float": st.floats(allow_nan=False, allow_infinity=False, width=64),
    "number": st.one_of(st.integers(-100, 100), st.floats(-1e3, 1e3)),
    "bool": st.booleans(),
    "nested": st.fixed_dictionaries({"norm": st.floats(-1e3, 1e3)}),
    "media": st.just({"_type": "image-file", "path": "media/x.png"}),
}


@st.composite
def _history_rows(draw):
    """Rows whose keys each keep one kind of value (as W&B logs them), some keys missing
    or null in some rows, one or two runs in the file."""
    kinds = draw(st.dictionaries(st.sampled_from(["loss", "lr", "grad", "acc"]), st.sampled_from(sorted(_KINDS)),
                                 min_size=1))
    rows = []
    for _ in range(draw(st.integers(1, 25))):
        values = {k: draw(st.one_of(st.none(), _KINDS[kind])) for k, kind in kinds.items() if draw(st.booleans())}
        rows.append((draw(st.integers(0, 50)), draw(st.sampled_from(["a", "b", None])), values))
    return rows


@settings(max_examples=60, deadline=None)
@given(_history_rows())
def test_jsonl_native_reader_gives_what_the_row_by_row_reader_gives(tmp_path_factory, rows):
    """Clean JSON lines go through Polars' reader; everything it accepts must come out
    exactly as the row-by-row path reads it (sparse keys, nested dicts, media objects,
    booleans and nulls skipped, several runs in one file)."""
    lines = []
    for i, (step, run_id, values) in enumerate(rows):
        row = {"_step": step, "_runtime": float(i), "_timestamp": 1.7e9 + i, **values}
        if run_id is not None:
            row["run_id"] = run_id
        lines.append(json.dumps(row))
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path_factory.mktemp("jsonl") / "scan_history.jsonl"
    path.write_bytes(data)
    assume(wandb_exports.typed_jsonl(data) is not None)  # the native path is the one on trial
    fast = {t.run_key: t.frame for t in wandb_exports.WandbHistoryImporter().read(path)}
    by_run: dict = {}
    for r in wandb_exports.parse_jsonl(path, data.decode()):
        by_run.setdefault(r.get("run_id") if isinstance(r.get("run_id"), str) else None, []).append(r)
    slow = {(f"{path}:{rid}" if rid is not None else str(path)): wandb_exports.rows_to_long(path, rs)
            for rid, rs in by_run.items()}

    def points(frame):
        return sorted(frame.select(pl.col("step"), pl.col("metric").cast(pl.String), "value", "wall_time").rows())

    assert set(fast) == set(slow)
    for key in fast:
        assert points(fast[key]) == points(slow[key])
