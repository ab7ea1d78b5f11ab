"""Headerless tables a tool's documentation names (#24): GPUMD's `loss.out` is read by its documented
columns (`gen L_t L_1 L_2 L_e_train ... L_v_test`), and a second training appended to it, its generation
counting from 100 again, is a restart of the count, not a new column of values. Fixtures are written
here as `nep` writes the file: the generation, then the loss terms, every 100-th generation."""
from __future__ import annotations

import math

import polars as pl

from spikelens import api


def _nep_rows(first_gen, n, width=10, start=3.5):
    rows = []
    for k in range(n):
        gen = first_gen + 100 * k
        total = start * math.exp(-k / 30) + 0.5
        terms = [total, 0.015, 0.02] + [total * f for f in (0.05, 0.6, 0.3, 0.06, 0.65, 0.32)][: width - 4]
        rows.append(f"{gen:<8d}" + "".join(f"{v:11.5f}" for v in terms))
    return rows


def test_gpumd_loss_out_reads_its_documented_columns(tmp_path):
    (tmp_path / "loss.out").write_text("\n".join(_nep_rows(100, 60)) + "\n")
    frame = api.load(str(tmp_path / "loss.out"))
    names = set(frame.get_column("metric").unique().to_list())
    assert names == {"L_t", "L_1", "L_2", "L_e_train", "L_f_train", "L_v_train", "L_e_test", "L_f_test", "L_v_test"}
    total = frame.filter(pl.col("metric") == "L_t").sort("seq")
    assert total.get_column("step").to_list()[:3] == [100, 200, 300]
    assert round(total.get_column("value")[0], 5) == 4.0
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    assert run.stats["main_metric"] == "L_t"
    assert run.metrics["L_e_test"] == "eval_loss"


def test_a_dipole_model_has_six_columns(tmp_path):
    (tmp_path / "loss.out").write_text("\n".join(_nep_rows(100, 40, width=6)) + "\n")
    names = set(api.load(str(tmp_path / "loss.out")).get_column("metric").unique().to_list())
    assert names == {"L_t", "L_1", "L_2", "L_train", "L_test"}


def test_a_second_training_appended_restarts_the_generation_count(tmp_path):
    rows = _nep_rows(100, 50) + _nep_rows(100, 30, start=0.2)  # `nep` run again from nep.restart
    (tmp_path / "loss.out").write_text("\n".join(rows) + "\n")
    frame = api.load(str(tmp_path / "loss.out"))
    total = frame.filter(pl.col("metric") == "L_t").sort("seq")
    assert total.height == 80 and total.get_column("step")[50] == 100
    (run,) = api.analyze(str(tmp_path), jobs=1).runs
    assert any(f.kind == "step_reset" for f in run.findings)


def test_other_tables_keep_the_names_their_shape_gives(tmp_path):
    # the same width under another name, and a `loss.out` whose first column is no counter
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "loss_history.out").write_text("\n".join(_nep_rows(100, 40)) + "\n")
    shuffled = [r.split() for r in _nep_rows(100, 40)]
    (tmp_path / "b" / "loss.out").write_text("\n".join(" ".join([r[1], r[0], *r[2:]]) for r in shuffled) + "\n")
    for path in (tmp_path / "a" / "loss_history.out", tmp_path / "b" / "loss.out"):
        names = api.load(str(path)).get_column("metric").unique().to_list()
        assert names and "L_t" not in names and all("column" in n for n in names)
