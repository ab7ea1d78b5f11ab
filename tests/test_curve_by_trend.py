"""A run that names no loss is still read, by what a person reads it by (#24, #25): the role words
in the languages training logs are printed in (`Verlust`, `награда`, `précision`), and where no name
says what to judge a run by, the curve that moves along it, its role read from its trend (a steady
fall: a loss; a steady rise: a score or a reward), with a note saying so; counters, clocks and
constants are never that curve; a curve with no steady trend is read for its non-finite values
and how the run ended only. Fixtures: logs written here as their writers print them (a print loop,
`json.dumps` lines of an SPSA optimiser, Python logging, a CSV logger)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import main_in_process
from spikelens import api, diagnostics
from spikelens.coverage import guessed, nothing_read
from spikelens.frame import infer_role, infer_roles
from spikelens.report.verdict import verdict


# ------------------------------------------------------------------ role words in other languages


@pytest.mark.parametrize("name, role", [
    ("Verlust", "loss"), ("train/Verlust", "loss"), ("perte", "loss"), ("val_perte", "eval_loss"),
    ("pérdida", "loss"), ("perda", "loss"), ("perdita", "loss"), ("kayıp", "loss"), ("mất mát", "loss"),
    ("kerugian", "loss"), ("потеря", "loss"), ("функция потерь", "loss"), ("coût", "loss"), ("custo", "loss"),
    ("Validierung Verlust", "eval_loss"), ("валидация_потери", "eval_loss"),
    ("награда", "reward"), ("récompense", "reward"), ("recompensa", "reward"), ("ödül", "reward"),
    ("phần thưởng", "reward"), ("успех_pct", "reward"), ("skor", "reward"), ("punteggio", "reward"),
    ("точность", "accuracy"), ("Genauigkeit", "accuracy"), ("précision", "accuracy"), ("precisión", "accuracy"),
    ("acurácia", "accuracy"), ("accuratezza", "accuracy"), ("doğruluk", "accuracy"), ("độ chính xác", "accuracy"),
    ("akurasi", "accuracy"), ("тестовая точность", "accuracy"), ("得分", "reward"), ("スコア", "reward"),
    ("점수", "reward"), ("准确度", "accuracy"),
    ("episode.rwd", "reward"), ("avg_rwd", "reward"),  # the abbreviation DQN scripts print
])
def test_role_words_in_the_languages_logs_are_printed_in(name, role):
    assert infer_role(name) == role


@pytest.mark.parametrize("name", ["experte", "performance", "costume", "experience", "Эпизод", "temps", "Epoche", "forward", "rwd_std"])
def test_words_that_only_look_like_them_stay_other(name):
    assert infer_roles([name])[name] == "other"


@pytest.mark.parametrize("name", ["ошибка", "Fehler", "erreur", "erro", "hata", "lỗi", "galat", "误差", "誤差", "오차"])
def test_an_error_in_another_language_stands_for_the_loss_of_a_run_that_names_none(name):
    assert infer_roles([name, "lr"])[name] == "loss"
    assert infer_roles([name, "loss"])[name] == "other"


# ------------------------------------------------------------------ fixtures


def _episode_avg_log(path, rise: bool = True) -> None:
    """A print loop of an RL script: `Episode 100 Avg: -1200.3 BestAvg: -1100.2 σ: 0.30`."""
    rng = np.random.default_rng(1)
    best, lines = -1e9, []
    for e in range(100, 4100, 100):
        avg = -1400 + (1200 * (1 - math.exp(-e / 1200)) if rise else 0) + 20 * rng.standard_normal()
        best = max(best, avg)
        lines.append(f"Episode {e} Avg: {avg:.1f} BestAvg: {best:.1f} σ: 0.30")
    path.write_text("\n".join(lines) + "\n")


def _spsa_jsonl(path, n: int = 60, with_objective: bool = True) -> None:
    """`f.write(json.dumps(rec) + "\\n")` of an SPSA optimiser: its two evaluations, a wall clock, a job's seconds."""
    rng = np.random.default_rng(2)
    t, rows = 0.0, []
    for k in range(n):
        t += 30 + rng.random()
        rec = {"k": k, "t_wall": round(t, 3), "qsec_job": 28 + int(rng.random() < 0.3), "S_plus": 2500}
        if with_objective:
            rec |= {"Jp": 3.5 * math.exp(-k / 20) + 0.2 * rng.standard_normal(),
                    "Jm": 3.4 * math.exp(-k / 20) + 0.2 * rng.standard_normal()}
        rows.append(json.dumps(rec))
    path.write_text("\n".join(rows) + "\n")


def _analyze(path):
    with diagnostics.collecting():
        return api.analyze(path, jobs=1)


# ------------------------------------------------------------------ a curve read by its trend


def test_a_rising_curve_no_name_says_is_read_as_a_reward_with_a_note(tmp_path, no_workers):
    _episode_avg_log(tmp_path / "train.log")
    report = _analyze(tmp_path / "train.log")
    run = report.runs[0]
    assert run.metrics["Avg"] == "reward" and run.metrics["BestAvg"] == "other"  # a running best is no curve
    assert guessed(run) == {"Avg": "rising"} and run.stats["main_metric"] == "Avg"
    assert any("judged by 'Avg', read as a reward" in w and "--role Avg=loss" in w for w in report.warnings)
    assert nothing_read(report, [tmp_path]) is None


def test_a_falling_curve_is_read_as_a_loss_and_clocks_are_passed_over(tmp_path, no_workers):
    _spsa_jsonl(tmp_path / "log.jsonl")
    report = _analyze(tmp_path / "log.jsonl")
    run = report.runs[0]
    assert guessed(run) == {"Jp": "falling"}  # the writer's first of the two evaluations; t_wall, qsec_job are clocks
    assert run.metrics["Jp"] == "loss" and run.metrics["t_wall"] == run.metrics["qsec_job"] == "other"
    assert "judged by 'Jp' read as a loss from its trend" in verdict(run)
    assert any("read as a loss from its trend (falling)" in w for w in report.warnings)


def test_a_run_of_counters_clocks_and_constants_only_is_still_refused(tmp_path, no_workers):
    _spsa_jsonl(tmp_path / "log.jsonl", with_objective=False)
    report = _analyze(tmp_path / "log.jsonl")
    assert not guessed(report.runs[0])
    refusal = nothing_read(report, [tmp_path])
    assert refusal is not None and "no loss could be read" in str(refusal)


def test_a_curve_with_no_trend_is_read_for_its_ending_only_never_for_loud_findings(tmp_path, no_workers):
    _episode_avg_log(tmp_path / "train.log", rise=False)
    report = _analyze(tmp_path / "train.log")
    run = report.runs[0]
    assert guessed(run) == {"Avg": "no steady trend"} and run.metrics["Avg"] == "other"
    assert not [f for f in run.findings if f.severity != "info"]
    assert any("'Avg' has no steady trend" in w and "--role Avg=loss" in w for w in report.warnings)
    assert nothing_read(report, [tmp_path]) is None
    assert "no steady trend" in verdict(run) and "clean" not in verdict(run)


def test_a_run_a_name_says_is_judged_by_is_never_guessed(tmp_path, no_workers):
    rows = ["epoch,Verlust,Genauigkeit"] + [f"{e},{2.3 * math.exp(-e / 10):.4f},{0.9 - 0.8 * math.exp(-e / 10):.4f}"
                                            for e in range(40)]
    (tmp_path / "history.csv").write_text("\n".join(rows) + "\n")
    report = _analyze(tmp_path / "history.csv")
    run = report.runs[0]
    assert run.metrics == {"Verlust": "loss", "Genauigkeit": "accuracy"} and not guessed(run)
    assert not any("from its trend" in w for w in report.warnings)


def test_a_role_the_user_gives_is_kept_and_check_still_fails_on_nothing_read(tmp_path, capsys, no_workers):
    _spsa_jsonl(tmp_path / "log.jsonl")
    code, out, err = main_in_process(capsys, "check", tmp_path, "--role", "Jp=other", "--role", "Jm=other")
    assert code == 2 and "no loss could be read" in err
    code, out, err = main_in_process(capsys, "check", tmp_path, "--role", "Jm=loss", "-f", "json")
    report = json.loads(out)
    assert report["runs"][0]["metrics"]["Jm"] == "loss" and not any("from its trend" in w for w in report["warnings"])


def test_a_models_shape_an_identity_and_a_countdown_are_no_curve(tmp_path, no_workers):
    # a print of each layer's widths, a worker's pid, the seconds left: they move, but not as training goes
    rng = np.random.default_rng(3)
    rows = [json.dumps({"k": k, "out_features": [1024, 4096, 1024, 512][k % 4], "RLRunner_pid": int(12050 + 10 * rng.random()),
                        "Remaining": 3000 - 50 * k}) for k in range(40)]
    (tmp_path / "log.jsonl").write_text("\n".join(rows) + "\n")
    report = _analyze(tmp_path / "log.jsonl")
    assert not guessed(report.runs[0]) and nothing_read(report, [tmp_path]) is not None
