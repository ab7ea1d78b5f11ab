"""`spikelens replay` on CPU with tiny models: where the first NaN/Inf is born, the gradient
table, the window, the logged-loss comparison, and the JSON contract."""
from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

torch = pytest.importorskip("torch")

from replay_targets import tiny  # noqa: E402

from conftest import main_in_process, run_cli  # noqa: E402
from spikelens.replay import replay, report_dict  # noqa: E402
from spikelens.replay.schema import REPLAY_SCHEMA  # noqa: E402

TINY = Path(tiny.__file__)


def target(name: str) -> str:
    return f"{TINY}:{name}"


def test_forward_nan_is_located_to_the_module_and_op():
    rep = replay(target("build_forward_nan"), 5, device="cpu")
    nf = rep.nonfinite
    assert nf is not None and rep.exit_code == 1
    assert (nf.phase, nf.module, nf.module_type, nf.op) == ("forward", "blocks.1.mlp", "Mlp", "log")
    assert "NaN" in nf.detail and nf.step == 5
    assert nf.where and "tiny.py" in nf.where and "torch.log" in nf.where
    assert math.isnan(rep.result.loss)


def test_backward_nan_names_the_backward_op_and_its_module():
    rep = replay(target("build_backward_nan"), 5, device="cpu")
    nf = rep.nonfinite
    assert nf is not None and rep.exit_code == 1
    assert (nf.phase, nf.op, nf.module) == ("backward", "SqrtBackward0", "blocks.0.mlp")
    assert math.isfinite(rep.result.loss)  # forward was finite: only anomaly mode / node hooks see it
    assert nf.where and "torch.sqrt" in nf.where
    rows = {r["layer"]: r for r in rep.result.grads.layer_rows()}
    # the NaN gradient flows into everything upstream of the sqrt, not into the head after it
    assert math.isnan(rows["blocks.0.mlp.fc1"]["grad_norm"]) and math.isnan(rows["embed"]["grad_norm"])
    assert math.isfinite(rows["head"]["grad_norm"])


def test_nan_in_the_batch_is_reported_as_input():
    nf = replay(target("build_nan_batch"), 2, device="cpu").nonfinite
    assert nf.phase == "input" and "batch['x']" in nf.detail and "1 of 64" in nf.detail


def test_fp16_overflow_only_under_float16_autocast():
    assert replay(target("build_fp16_overflow"), 3, device="cpu", dtype="float32").nonfinite is None
    nf = replay(target("build_fp16_overflow"), 3, device="cpu", dtype="float16").nonfinite
    assert nf is not None and (nf.phase, nf.module, nf.op) == ("forward", "blocks.1.mlp", "mul")
    assert "Inf" in nf.detail


def test_healthy_step_table_matches_an_independent_backward():
    rep = replay(target("build"), 7, device="cpu")
    assert rep.nonfinite is None and rep.exit_code == 0
    model, _ = tiny.make()
    loss = tiny.mse(model, tiny.batch_for_step(7))
    loss.backward()
    assert rep.result.loss == pytest.approx(loss.item(), rel=1e-6)
    want = {n: float(p.grad.norm()) for n, p in model.named_parameters()}
    params = report_dict(rep)["parameters"]
    assert {r["name"] for r in params} == set(want)
    for r in params:
        assert r["grad_norm"] == pytest.approx(want[r["name"]], rel=1e-5)
        # SGD: Δw = lr·g, so ‖Δw‖/‖w‖ = lr·‖g‖/‖w‖ (a zero-initialised bias moves from 0: infinite ratio)
        if r["param_norm"] > 0:
            assert r["update_ratio"] == pytest.approx(0.05 * r["grad_norm"] / r["param_norm"], rel=1e-4)
        else:
            assert r["update_ratio"] == ("Infinity" if r["grad_norm"] > 0 else "NaN")
    total = math.sqrt(sum(v * v for v in want.values()))
    assert rep.result.grad_norm == pytest.approx(total, rel=1e-5)
    grads = [r["grad_norm"] for r in params]
    assert grads == sorted(grads, reverse=True)


def test_layer_shares_and_dominant_layers():
    data = report_dict(replay(target("build"), 7, device="cpu"))
    layers = data["layers"]
    assert sum(r["share"] for r in layers) == pytest.approx(1.0)
    assert [r["grad_norm"] for r in layers] == sorted((r["grad_norm"] for r in layers), reverse=True)
    fc1 = next(r for r in layers if r["layer"] == "blocks.0.mlp.fc1")
    assert fc1["params"] == 2 and fc1["numel"] == 8 * 8 + 8
    dom = data["dominant"]
    cum = [sum(d["share"] for d in dom[: i + 1]) for i in range(len(dom))]
    assert cum[-1] >= 0.5 and all(c < 0.5 for c in cum[:-1])
    assert [d["layer"] for d in dom] == [r["layer"] for r in layers[: len(dom)]]


def test_no_optimizer_means_no_update_ratio():
    data = report_dict(replay(target("build_no_optimizer"), 1, device="cpu"))
    assert data["optimizer"] is None
    assert all(r["update_ratio"] is None for r in data["layers"])


def test_window_steps_the_optimizer_and_stops_at_the_first_nonfinite():
    rep = replay(target("build_diverging"), 6, device="cpu", window=5)
    steps = [p["step"] for p in rep.window]
    assert steps[0] == 1 and steps == list(range(1, steps[-1] + 1))
    assert rep.window[-1]["finite"] is False and all(p["finite"] for p in rep.window[:-1])
    assert rep.result.step == steps[-1] < 6
    assert rep.exit_code == 1 and any("stopped the window" in w for w in rep.warnings)
    # the weights moved: a step's loss differs from that of the checkpoint's weights on the same batch
    model, _ = tiny.make()
    fresh = tiny.mse(model, tiny.batch_for_step(2, scale=100.0)).item()
    assert rep.window[1]["loss"] != pytest.approx(fresh, rel=1e-3)


def test_healthy_window_reports_every_step():
    rep = replay(target("build"), 4, device="cpu", window=3)
    assert [p["step"] for p in rep.window] == [1, 2, 3, 4]
    assert all(p["finite"] and p["grad_norm"] > 0 for p in rep.window)


def _trainer_state(root: Path, losses: dict[int, float]) -> Path:
    """A run folder as the HF Trainer leaves it (trainer_state.json with log_history)."""
    run = root / "hf-run"
    run.mkdir()
    history = [{"epoch": s / 100, "learning_rate": 0.05, "loss": v, "step": s} for s, v in sorted(losses.items())]
    (run / "trainer_state.json").write_text(json.dumps({"global_step": max(losses), "log_history": history,
                                                        "max_steps": 100, "epoch": 0.1}))
    return run


def _true_loss(step: int) -> float:
    model, _ = tiny.make()
    return tiny.mse(model, tiny.batch_for_step(step)).item()


def test_logged_loss_reproduced(tmp_path):
    run = _trainer_state(tmp_path, {s: _true_loss(s) for s in (3, 4, 5)})
    rep = replay(target("build"), 5, device="cpu", logdir=run, metric="loss")
    assert rep.logged["reproduced"] is True and rep.logged["rel_diff"] < 1e-5
    assert rep.logged["value"] == pytest.approx(_true_loss(5))


def test_logged_spike_not_reproduced_is_a_finding(tmp_path):
    run = _trainer_state(tmp_path, {4: _true_loss(4), 5: 10 * _true_loss(5)})
    rep = replay(target("build"), 5, device="cpu", logdir=run)  # metric inferred: the main loss
    assert rep.logged["metric"] == "loss"
    assert rep.logged["reproduced"] is False and rep.logged["rel_diff"] == pytest.approx(0.9, rel=1e-4)
    assert "data × state" in rep.logged["message"]
    assert any("--metric not given" in w for w in rep.warnings)


def test_unknown_metric_is_an_error(tmp_path):
    from spikelens.errors import ReplayError

    run = _trainer_state(tmp_path, {5: 1.0})
    with pytest.raises(ReplayError, match="no metric 'train/nope'.*loss"):
        replay(target("build"), 5, device="cpu", logdir=run, metric="train/nope")


def test_checkpoint_is_passed_to_build(tmp_path):
    model, opt = tiny.make()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
    ckpt = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, ckpt)
    rep = replay(target("build"), 2, device="cpu", checkpoint=ckpt)
    assert rep.checkpoint == str(ckpt)
    assert rep.result.loss == pytest.approx(tiny.mse(model, tiny.batch_for_step(2)).item(), rel=1e-6)


# ---------------------------------------------------------------- the real CLI


def _validate(data: dict) -> None:
    jsonschema.validate(data, REPLAY_SCHEMA)


# exit 0 and 1 through the real entry point in this process (a process start imports torch
# again: CI time); the one-line error of exit 2 comes from a real process
def test_cli_exit_0_json_healthy(capsys):
    code, out, err = main_in_process(capsys, "replay", target("build_no_optimizer"), "--step", "3", "--device", "cpu",
                                     "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    _validate(data)
    assert data["schema"] == "spikelens.replay/1" and data["finite"] is True and data["nonfinite"] is None
    assert data["layers"] and data["layers"][0]["share"] > 0


def test_cli_exit_1_json_backward_nan(capsys):
    code, out, err = main_in_process(capsys, "replay", target("build_backward_nan"), "--step", "3", "--device", "cpu",
                                     "-f", "json")
    assert code == 1, err
    data = json.loads(out)
    _validate(data)
    assert data["nonfinite"]["op"] == "SqrtBackward0" and data["grad_norm"] == "NaN"
    assert "Traceback" not in err


def test_cli_exit_2_one_line_for_a_build_that_raises():
    res = run_cli("replay", target("build_raises"), "--step", "3", "--device", "cpu")
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "ValueError: no data for step 3" in lines[0]
    assert res.stdout == ""


def test_the_users_line_is_found_under_an_environment_named_torch():
    """Frames of torch itself and of spikelens.replay are skipped by their packages' folders; a
    library under an environment that happens to live in /opt/torch/ (transformers' loss code,
    where an all-masked batch divides 0 by 0) is the line shown."""
    import traceback

    import torch as _torch

    from spikelens.replay.watch import user_frame

    frames = [traceback.FrameSummary("/opt/torch/.venv/lib/python3.12/site-packages/transformers/loss/loss_utils.py",
                                     36, "fixed_cross_entropy", line="loss = loss / num_items_in_batch"),
              traceback.FrameSummary(_torch.__file__, 10, "log", line="")]
    assert user_frame(frames).startswith("/opt/torch/.venv/lib/python3.12/site-packages/transformers/loss/loss_utils.py:36")
