"""CSV importer: generic wide/long CSVs, Lightning and Keras CSVLogger files, damaged files.

Expected values are recomputed from the fixture writer (`fixtures/writers/csvlogs.py`),
never copied from the importer's output.
"""
from __future__ import annotations

import json
import math
import sys
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from conftest import FIXTURES, load, ls_without_writing, metric, run_cli, tree_hashes
from spikelens.frame import infer_role
from spikelens.importers.base import read_head
from spikelens.importers.csvlogs import CsvImporter, looks_binary
from spikelens.importers.registry import IMPORTERS

sys.path.insert(0, str(FIXTURES))
from writers import csvlogs as W  # noqa: E402

CSV = FIXTURES / "csv"


def test_fixtures_are_what_the_writer_writes(tmp_path):
    W.make(tmp_path)
    assert tree_hashes(tmp_path / "csv") == tree_hashes(CSV)


def test_generic_wide_csv_values_wall_time_and_string_column():
    (run,), warnings = load(CSV / "generic")
    want = W.series()
    assert run.formats == ["csv"]
    assert set(run.frame["metric"].unique()) == {"loss", "grad_norm", "lr"}  # phase is text, wall_time is time
    loss = metric(run, "loss")
    assert loss["step"].to_list() == want["step"].tolist()
    got, exp = loss["value"].to_numpy(), want["loss"]
    assert np.isnan(got[W.NAN_STEP]) and np.isnan(exp[W.NAN_STEP])
    np.testing.assert_array_equal(np.delete(got, W.NAN_STEP), np.delete(exp, W.NAN_STEP))
    np.testing.assert_array_equal(metric(run, "lr")["value"].to_numpy(), want["lr"])
    np.testing.assert_allclose(loss["wall_time"].to_numpy(), 1_700_000_000.0 + 2.5 * np.arange(W.N_STEPS))
    assert warnings == []


def test_rows_keep_read_order_across_metrics():
    (run,), _ = load(CSV / "generic")
    first = run.frame.head(3)
    assert first["metric"].to_list() == ["loss", "grad_norm", "lr"]  # column order within a row
    assert first["step"].to_list() == [0, 0, 0]
    assert run.frame["seq"].to_list() == list(range(run.frame.height))


def test_appended_resume_is_two_segments_and_epoch_is_an_other_metric():
    (run,), _ = load(CSV / "resume_appended")
    assert [(s["first_step"], s["last_step"]) for s in run.segments] == [(0, W.RESUME_FROM - 1), (W.RESUME_AT, W.N_STEPS - 1)]
    epoch = metric(run, "epoch")
    assert epoch.height == W.RESUME_FROM + (W.N_STEPS - W.RESUME_AT)
    assert infer_role("epoch") == "other"
    assert "global_step" not in set(run.frame["metric"])


def test_every_nan_inf_and_null_spelling():
    (run,), _ = load(CSV / "nan_spellings")
    loss = metric(run, "loss")
    # NA, empty and null are "not logged": no rows at those steps
    assert loss["step"].to_list() == [0, 10, 20, 30, 40, 50, 60, 70, 80, 120]
    vals = loss["value"].to_list()
    assert vals[0] == 1.5 and vals[-1] == 0.25
    assert all(math.isnan(v) for v in vals[1:4])
    assert vals[4:9] == [math.inf, -math.inf, math.inf, -math.inf, math.inf]


def test_missing_step_column_uses_the_row_number_with_a_warning():
    (run,), warnings = load(CSV / "no_step" / "losses.csv")
    assert metric(run, "loss")["step"].to_list() == list(range(40))
    assert any("row number" in w for w in warnings)


def test_long_layout_step_metric_value():
    (run,), _ = load(CSV / "long" / "scalars.csv")
    want = W.series(seed=4, n=60)
    np.testing.assert_array_equal(metric(run, "train/loss")["value"].to_numpy(), want["loss"])
    assert metric(run, "train/lr")["step"].to_list() == list(range(0, 60, 5))
    assert set(run.frame["metric"]) == set(W.LONG_METRICS)


def test_semicolons_and_decimal_commas():
    (run,), _ = load(CSV / "semicolon")
    np.testing.assert_allclose(metric(run, "loss")["value"].to_numpy(), [2.5 - i / 10 for i in range(10)])
    assert metric(run, "lr")["value"].to_list() == [0.001] * 10


def test_header_repeated_inside_a_concatenated_file():
    (run,), warnings = load(CSV / "concatenated")
    want = W.series(seed=5, n=80)
    np.testing.assert_array_equal(metric(run, "loss")["value"].to_numpy(), want["loss"])
    assert len(run.segments) == 1
    assert any("header repeated" in w for w in warnings)


def test_iso_datetime_time_column_becomes_wall_time():
    (run,), _ = load(CSV / "iso_time")
    loss = metric(run, "loss")
    t0 = datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=timezone.utc).timestamp()
    assert loss["wall_time"][0] == pytest.approx(t0)
    assert loss["wall_time"][29] == pytest.approx(t0 + 29)
    assert set(run.frame["metric"]) == {"loss"}  # iteration is the step, time is wall time


def test_lightning_versions_are_segments_of_one_run():
    runs, _ = load(CSV / "lightning")
    assert len(runs) == 1
    run = runs[0]
    assert run.name == "exp" and run.formats == ["lightning_csv"]
    assert [Path(s["source"]).parent.name for s in run.segments] == ["version_0", "version_1"]
    for version, seg in zip((0, 1), run.segments):
        keys, rows = W.lightning_rows(version)
        cells = sum(1 for r in rows for k, v in r.items() if k != "step" and v != "")
        assert seg["points"] == cells
        assert seg["first_step"] == min(int(r["step"]) for r in rows)
    weird = metric(run, "train/weird")
    assert weird.height == 1 and math.isnan(weird["value"][0])
    # LR-monitor rows have no epoch: epoch points only where the row had one
    epoch_rows = sum(1 for v in (0, 1) for r in W.lightning_rows(v)[1] if "epoch" in r)
    assert metric(run, "epoch").height == epoch_rows


def test_keras_training_log_with_append_resume_is_read_with_a_warning():
    path = CSV / "keras" / "training.log"
    assert CsvImporter().claims(path, read_head(path))
    (run,), warnings = load(path)
    assert run.formats == ["keras_csv"]
    assert metric(run, "loss")["step"].to_list() == list(range(W.KERAS_EPOCHS))
    np.testing.assert_allclose(metric(run, "val_loss")["value"].to_numpy(),
                               [W.keras_logs(e)["val_loss"] for e in range(W.KERAS_EPOCHS)])
    weird = metric(run, "weird")  # NA at epoch 2, missing after the resume
    assert weird["step"].to_list() == [0, 1, 3]
    assert math.isnan(weird["value"][1])
    assert any("fewer fields" in w for w in warnings)


def test_keras_no_validation_columns_leave_no_points():
    (run,), _ = load(CSV / "keras" / "no_val.csv")
    assert set(run.frame["metric"]) == {"loss", "mae"}


@pytest.mark.parametrize("name, needle", [("empty.csv", "empty file"), ("header_only.csv", "header only")])
def test_files_with_nothing_to_read_warn_and_give_no_points(name, needle):
    runs, warnings = load(CSV / "damaged" / name)
    assert runs == []
    assert any(needle in w and name in w for w in warnings)


def test_binary_file_named_csv_is_a_one_line_error():
    res = run_cli("ls", CSV / "damaged" / "binary.csv")
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "binary.csv" in lines[0] and "not a CSV" in lines[0]
    assert "Traceback" not in res.stderr


def test_binary_file_inside_a_folder_is_skipped_with_a_warning():
    runs, warnings = load(CSV / "damaged")
    assert any("binary.csv" in w and "skipped" in w for w in warnings)
    assert {Path(r.sources[0]).name for r in runs} >= {"truncated.csv", "ragged.csv", "latin1.csv", "stray_text.csv"}


def test_non_utf8_bytes_are_replaced_with_a_warning():
    (run,), warnings = load(CSV / "damaged" / "latin1.csv")
    assert metric(run, "loss")["value"].to_list() == [2.5, 2.4, 2.3]
    assert "note" not in set(run.frame["metric"])  # a text column
    assert any("not UTF-8" in w for w in warnings)


def test_truncated_last_line_keeps_every_readable_value():
    (run,), warnings = load(CSV / "damaged" / "truncated.csv")
    loss = metric(run, "loss")
    assert loss["step"].to_list() == list(range(20))
    assert loss["value"][-1] == 1.1
    assert metric(run, "lr").height == 19
    assert any("cut short" in w for w in warnings)


def test_ragged_rows_and_stray_text_cells_are_warned_and_kept():
    (run,), warnings = load(CSV / "damaged" / "ragged.csv")
    assert metric(run, "loss")["step"].to_list() == [0, 1, 2, 4]
    assert any("more fields" in w for w in warnings) and any("fewer fields" in w for w in warnings)
    (run,), warnings = load(CSV / "damaged" / "stray_text.csv")
    assert metric(run, "loss")["step"].to_list() == [0, 2, 3, 4]
    assert any("not numbers" in w and "'loss'" in w for w in warnings)


@pytest.mark.parametrize("name", ["runs_table.csv", "data.csv", "requirements.txt"])
def test_files_that_are_not_training_logs_are_not_claimed(name):
    path = CSV / "not_logs" / name
    assert not any(imp.claims(path, read_head(path)) for imp in IMPORTERS if not imp.claims_dirs)


def test_not_logs_folder_is_a_one_line_nothing_found_error():
    res = run_cli("ls", CSV / "not_logs")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "no training logs found" in res.stderr


def test_registry_order_folder_importers_first_chart_before_csv_text_last():
    names = [imp.name for imp in IMPORTERS]
    assert names.index("wandb_chart_csv") < names.index("csv")
    assert names.index("wandb_history") < names.index("csv")
    assert names[-1] == "text"
    folder = [i for i, imp in enumerate(IMPORTERS) if imp.claims_dirs]
    assert folder == list(range(len(folder)))


def test_cli_reads_the_csv_fixtures_without_writing_into_them(tmp_path):
    runs = {r["run"]: r for r in ls_without_writing(CSV, tmp_path, "lightning", "keras")}
    assert len(runs["exp"]["segments"]) == 2
    assert runs["exp"]["metrics"]["train/loss"] == "loss"


def test_header_longer_than_the_sniffed_head_is_still_claimed(tmp_path):
    names = [f"layer_{i:03d}/grad_norm" for i in range(300)] + ["step"]
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join(["0.5"] * 300 + ["7"]) + "\n")
    assert len(names[0]) * 300 > 4096
    (run,), _ = load(path)
    assert run.frame.height == 300 and run.frame["step"].unique().to_list() == [7]


def _rows(steps, quoted=False):
    """CSV lines `step,loss,lr` for the given steps (every field quoted, as W&B writes, when asked)."""
    q = '"' if quoted else ""
    return [f"{q}{s}{q},{q}{2.5 - s / 10}{q},{q}0.001{q}" for s in steps]


def test_broken_quoting_in_some_lines_keeps_every_other_row(tmp_path):
    lines = _rows(range(10), quoted=True)
    lines[3] = lines[3].replace('"3"', '"3"x')  # a byte after a closing quote (a control byte is dropped now)
    lines[6] = lines[6].replace('"0.001"', '"0.0')  # an unclosed quote
    path = tmp_path / "metrics.csv"
    path.write_text('"step","loss","lr"\n' + "\n".join(lines) + "\n" + _rows([10], quoted=True)[0][:7])
    (run,), warnings = load(path)
    kept = [s for s in range(10) if s not in (3, 6)]
    assert metric(run, "loss")["step"].to_list() == kept
    assert metric(run, "loss")["value"].to_list() == [2.5 - s / 10 for s in kept]
    assert [w for w in warnings if "broken quoting" in w and "metrics.csv" in w and "3 damaged line(s)" in w
            and "line 5" in w and "cut short" in w]
    # a stray quote inside an unquoted field: the row fits the header, so its other cells are kept
    lines = _rows(range(5))
    lines[2] = lines[2].replace("0.001", '0.0"01')
    path.write_text("step,loss,lr\n" + "\n".join(lines) + "\n")
    (run,), warnings = load(path)
    assert metric(run, "loss")["step"].to_list() == list(range(5))
    assert metric(run, "lr")["step"].to_list() == [0, 1, 3, 4]
    assert any("1 damaged line(s)" in w and "line 4" in w for w in warnings)


def test_nul_bytes_in_a_text_csv_skip_only_their_lines(tmp_path):
    lines = _rows(range(8))
    lines[2] = lines[2][:3] + "\x00" + lines[2][3:]  # a stray NUL
    path = tmp_path / "metrics.csv"
    path.write_bytes(("step,loss,lr\n" + "\n".join(lines) + "\n").encode() + b"\x00" * 3000)  # zero-filled tail
    assert not looks_binary(path.read_bytes()[:4096])
    (run,), warnings = load(path)
    kept = [s for s in range(8) if s != 2]
    assert metric(run, "loss")["step"].to_list() == kept
    assert metric(run, "loss")["value"].to_list() == [2.5 - s / 10 for s in kept]
    assert any("metrics.csv" in w and "2 line(s) with NUL bytes" in w and "line 4" in w for w in warnings)
    assert looks_binary(bytes(range(256)) * 16) and looks_binary(b"\x00" * 100)  # still binary


def test_unreadable_step_cells_drop_only_their_rows(tmp_path):
    steps = [str(s) for s in range(0, 100, 10)]
    steps[4], steps[7] = "4.26", "nan"  # a field shifted into the step column, a flipped byte
    path = tmp_path / "metrics.csv"
    path.write_text("step,loss\n" + "".join(f"{s},{1 + i / 10}\n" for i, s in enumerate(steps)))
    (run,), warnings = load(path)
    kept = [i for i in range(10) if i not in (4, 7)]
    assert metric(run, "loss")["step"].to_list() == [10 * i for i in kept]
    assert metric(run, "loss")["value"].to_list() == [1 + i / 10 for i in kept]
    assert any("metrics.csv" in w and "2 row(s) without a readable 'step'" in w for w in warnings)
    # an epoch column that is mostly fractional is no step: the rows are numbered, as before
    path.write_text("epoch,loss\n" + "".join(f"{e / 4},{1 + e / 10}\n" for e in range(1, 9)))
    (run,), warnings = load(path)
    assert metric(run, "loss")["step"].to_list() == list(range(8))
    assert any("row number" in w for w in warnings)


@pytest.mark.parametrize("name,role", [
    ("train/ce", "loss"), ("eval/ce", "eval_loss"), ("objective", "loss"), ("train/bpb", "loss"),
    ("val/bpb", "eval_loss"), ("bits_per_byte", "loss"), ("cost", "loss"), ("Train/Loss", "loss"),
    ("lm loss vs samples", "other"), ("compute_cost", "other"), ("face", "other"), ("trace", "other"),
    ("train/loss_scale", "loss_scale"), ("optimizer/grad_norm", "grad_norm"), ("lr-AdamW", "lr"),
    ("param_norm", "other"), ("train/weight_norm", "other"), ("update_norm", "other"), ("total_norm", "grad_norm"),
    ("grad_norm/total", "grad_norm"), ("train/param_grad_norm", "grad_norm"),
    ("train/mse", "loss"), ("val/rmse", "eval_loss"), ("mae", "loss"), ("train_bce", "loss"), ("mse_weight", "other"),
])
def test_roles_from_the_names_people_log(name, role):
    assert infer_role(name) == role


def test_rows_out_of_step_order_are_one_launch_sorted_with_a_warning(tmp_path):
    """Steps that go back without any step logged twice are rows out of order (merged or
    asynchronous writers), not relaunches: one segment, every point, sorted, a warning."""
    rng = np.random.default_rng(0)
    steps = rng.permutation(np.arange(0, 2000, 10))
    (tmp_path / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{2 + 1 / (int(s) + 1)!r}\n" for s in steps))
    (run,), warnings = load(tmp_path)
    assert len(run.segments) == 1
    loss = metric(run, "loss")
    assert loss["step"].to_list() == sorted(steps.tolist())
    assert [w for w in warnings if "rows are not in step order" in w and "metrics.csv" in w]
    proc = run_cli("analyze", tmp_path, "--format", "json")
    kinds = [f["kind"] for r in json.loads(proc.stdout)["runs"] for f in r["findings"]]
    assert "resume_overlap" not in kinds
