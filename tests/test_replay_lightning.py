"""Zero-code replay of a real `lightning.Trainer` run: `lightning_callback` in the real Trainer,
`spikelens replay STEP.ckpt --module file.py:LitRegressor --step N` naming the module and op of
the planted NaN, the replayed losses equal to the CSVLogger's, and `--bisect` over 32 steps."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

from replay_targets import lit_run  # noqa: E402

from conftest import main_in_process, run_cli  # noqa: E402
from spikelens.replay import captured_steps, load_capture, replay  # noqa: E402

BAD, SAVE_AT, STEPS = 22, 4, 36  # the checkpoint holds steps 0..3; captures 4..35 are 32 steps
MODULE = f"{lit_run.__file__}:LitRegressor"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return lit_run.train(tmp_path_factory.mktemp("lit"), steps=STEPS, bad_step=BAD, save_at=SAVE_AT)


def _csv_losses(run) -> dict[int, float]:
    import polars as pl

    frame = pl.read_csv(next((run / "logs").rglob("metrics.csv")))
    return {int(s): float(v) for s, v in zip(frame["step"], frame["train_loss"]) if v is not None}


def test_the_callback_captured_the_planted_step(run):
    caps = run / "spikelens-captures"
    assert captured_steps(caps) == list(range(STEPS))
    bad = load_capture(caps, BAD)
    assert math.isnan(bad["loss"]) and bad["meta"]["trainer"] == "lightning"
    assert bad["meta"]["max_grad_norm"] == 1.0 and bad["meta"]["batch_idx"] == BAD
    assert math.isnan(_csv_losses(run)[BAD])


def test_replay_names_the_module_and_op_and_matches_the_logged_losses(run):
    rep = replay(str(run / f"step{SAVE_AT}.ckpt"), BAD, module=MODULE, captures=run / "spikelens-captures",
                 device="cpu", window=2, logdir=run / "logs", metric="train_loss")
    nf = rep.nonfinite
    assert (nf.phase, nf.module, nf.module_type, nf.op) == ("forward", "features", "LogFeatures", "log")
    assert "lit_run.py" in nf.where and "torch.log" in nf.where and nf.step == BAD
    assert rep.source["kind"] == "lightning" and rep.source["at_step"] == SAVE_AT - 1
    assert "optimizer (AdamW)" in rep.source["restored"]
    logged = _csv_losses(run)
    assert [p["step"] for p in rep.window] == [20, 21, 22]
    for p in rep.window[:-1]:
        assert p["loss"] == pytest.approx(logged[p["step"]], rel=1e-6)
    assert rep.replayed["drift_step"] is None and rep.replayed["compared_losses"] == BAD - SAVE_AT + 1
    assert rep.logged["reproduced"] is True and rep.exit_code == 1


def test_cli_bisect_over_32_steps(run):
    import json

    res = run_cli("replay", run / f"step{SAVE_AT}.ckpt", "--module", MODULE, "--bisect", f"{SAVE_AT}..{STEPS - 1}",
                  "--captures", run / "spikelens-captures", "--format", "json")
    assert res.returncode == 1, res.stderr
    b = json.loads(res.stdout)["bisect"]
    assert b["first_bad"] == BAD and b["checked_steps"] <= 6


def test_a_lightning_checkpoint_needs_its_module(run, capsys):
    # the CLI's entry point in this process: a process start imports torch and Lightning
    # again (CI time); test_cli_bisect_over_32_steps runs a real one
    code, _, err = main_in_process(capsys, "replay", run / f"step{SAVE_AT}.ckpt", "--step", "10",
                                   "--captures", run / "spikelens-captures")
    assert code == 2 and "--module pkg.mod:Class" in err
    code, _, err = main_in_process(capsys, "replay", run / f"step{SAVE_AT}.ckpt", "--step", "10",
                                   "--module", "no_such_pkg.mod:Lit", "--captures", run / "spikelens-captures")
    assert code == 2 and "no_such_pkg" in err and "Traceback" not in err
