"""Events of a launch that a later one replaced: when one text log holds several launches (a
restart from step 0, runs appended to the same file), the detectors judge the live timeline
and skip the replaced points, but a value that went NaN/inf, and a crash, are facts about the
run a person reading the file sees. Fixtures: console logs written here as a script prints them."""
from __future__ import annotations

import math

from spikelens import api, diagnostics

OOM = ("Traceback (most recent call last):\n"
       '  File "/home/u/train.py", line 300, in <module>\n'
       "    loss.backward()\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.53 GiB.\n")


def _fmt(v: float) -> str:
    return "nan" if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.4f}")


def _launch(stop: int, loss=lambda s: 5.0 - 0.01 * s, kl=lambda s: 0.02 + 0.0001 * s, seed: int = 0) -> str:
    out = ["==== starting run ====", f"seed {seed}"]
    for s in range(stop + 1):
        wobble = 0.002 * ((s * 7919 + seed) % 13 - 6)
        out.append(f"step {s} | loss {_fmt(loss(s) + wobble)} | kl_approx {_fmt(kl(s))} | lr 0.0003")
    return "\n".join(out) + "\n"


def _run(path):
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return run


def _nan(run, metric):
    return [f for f in run.findings if f.kind == "nan" and f.metric == metric]


def test_an_inf_only_in_a_replaced_launch_is_reported(tmp_path, no_workers):
    path = tmp_path / "train.log"
    inf_kl = lambda s: math.inf if 10 <= s <= 12 else 0.02  # noqa: E731
    path.write_text(_launch(40, kl=inf_kl) + OOM + _launch(150, seed=1))
    run = _run(path)
    assert len(run.segments) == 2 and run.segments[0]["superseded"] > 0  # the first launch is replaced
    (f,) = _nan(run, "kl_approx")
    assert f.code == "SL201" and f.severity == "info"  # a side metric's NaN is a note
    assert f.evidence["replaced_launch"] is True and f.evidence["launches"] == [1]
    assert f.evidence["first_nonfinite"] == "+inf" and f.evidence["nonfinite_points"] == 3
    assert f.start_step == 10 and "launch 1" in f.message and "stays finite" in f.message
    # the crash that ended the first launch survives too (SL306 info with its error line)
    crashed = [g for g in run.findings if g.kind == "ended_early" and g.evidence.get("launch_crashed")]
    assert crashed and "OutOfMemoryError" in crashed[0].evidence["error_line"]


def test_a_loss_nan_in_a_replaced_launch_is_a_warning_that_absorbs_nothing(tmp_path, no_workers):
    path = tmp_path / "train.log"
    nan_loss = lambda s: math.nan if s >= 30 else 5.0 - 0.01 * s  # noqa: E731
    runaway = lambda s: 5.0 - 0.01 * s if s < 120 else 3.8 * 1.15 ** (s - 120)  # the live run's own event  # noqa: E731
    path.write_text(_launch(35, loss=nan_loss) + _launch(150, loss=runaway, seed=1))
    run = _run(path)
    (f,) = _nan(run, "loss")
    assert f.severity == "warning" and f.evidence["replaced_launch"] and f.start_step == 30
    assert f.evidence["nonfinite_points"] == 6 and "folded" not in f.evidence and "also_on" not in f.evidence
    # the live timeline's own events are judged as before, not folded into the replaced launch's NaN
    assert [g for g in run.findings if g.metric == "loss" and g.kind == "divergence" and g.start_step >= 110]


def test_a_live_nan_counts_the_replaced_launches_ones(tmp_path, no_workers):
    path = tmp_path / "train.log"
    inf_kl = lambda s: math.inf if s in (5, 6) else 0.02  # noqa: E731
    late_inf = lambda s: math.inf if s >= 140 else 0.02  # noqa: E731
    path.write_text(_launch(40, kl=inf_kl) + _launch(150, kl=late_inf, seed=1))
    (f,) = _nan(_run(path), "kl_approx")
    assert f.start_step == 140 and "replaced_launch" not in f.evidence
    assert f.evidence["superseded_nonfinite_points"] == 2 and "a later one replaced" in f.message


def test_finite_replaced_launches_say_nothing(tmp_path, no_workers):
    path = tmp_path / "train.log"
    path.write_text(_launch(40) + _launch(150, seed=1))
    assert not _nan(_run(path), "kl_approx") and not _nan(_run(path), "loss")


def test_a_launch_stopped_by_its_own_nan_check_and_launched_again_is_told(tmp_path, no_workers):
    path = tmp_path / "train.log"  # no NaN among the values: the script's check stopped the launch first
    path.write_text(_launch(40) + "Loss is nan, stopping training\n" + _launch(150, seed=1))
    run = _run(path)
    (f,) = [g for g in run.findings if g.kind == "ended_early" and g.evidence.get("launch_crashed")]
    assert f.severity == "info" and f.evidence["died_of_nan"] is True and f.evidence["last_step"] == 40
    assert "stopped on NaN/inf values after step 40" in f.message and "Loss is nan" in f.message


def test_a_nan_warning_the_launch_went_on_after_is_no_launch_end(tmp_path, no_workers):
    path = tmp_path / "train.log"  # fp16 skips a step and the launch goes on: no launch ended there
    text = _launch(150).replace("step 41 |", "Gradient overflow: grads are nan, skipping step\nstep 41 |")
    path.write_text(text)
    assert not [g for g in _run(path).findings if g.kind == "ended_early" and g.evidence.get("launch_crashed")]



def test_an_inf_of_a_key_the_later_launch_no_longer_prints_is_told_once(tmp_path, no_workers):
    path = tmp_path / "train.log"  # its points stay live (nothing replaces them): one finding, not a second note
    first = _launch(40, kl=lambda s: math.inf if s >= 20 else 0.02)
    second = "".join(f"step {s} | loss {5.0 - 0.01 * s + 0.002 * ((s * 7919) % 13 - 6):.4f} | lr 0.0003\n"
                     for s in range(151))
    path.write_text(first + second)
    (f,) = _nan(_run(path), "kl_approx")
    assert f.start_step == 20 and f.evidence["nonfinite_points"] == 21
