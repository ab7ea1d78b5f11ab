"""`--bisect FROM..TO` over a plain state dict and a model factory: a NaN that only the state
shows (bisection proper), a loss jump, a clean range, a drifting replay, and the CLI."""
from __future__ import annotations

import json
import math

import pytest

torch = pytest.importorskip("torch")

from replay_targets import bisect_model  # noqa: E402

from conftest import main_in_process, run_cli  # noqa: E402
from spikelens.replay import replay  # noqa: E402

FACTORY = f"{bisect_model.__file__}:make"


def _bisect(ckpt, caps, span, **kw):
    return replay(str(ckpt), bisect=span, module=FACTORY, captures=caps, device="cpu", **kw)


@pytest.mark.parametrize("planted", [3, 11, 17, 26, 32])
def test_a_nan_only_the_state_shows_is_found_with_at_most_6_checked_replays(tmp_path, planted):
    ckpt, caps, losses = bisect_model.train(tmp_path, steps=32, nan_lr_at=planted, rare_at=(2,))
    assert all(math.isfinite(v) for v in losses.values())  # the logs never show it
    rep = _bisect(ckpt, caps, "1..32")
    b = rep.bisect
    assert b["first_bad"] == planted and rep.exit_code == 1
    assert b["checked_steps"] <= 6, b["probes"]
    nf = rep.nonfinite
    assert (nf.phase, nf.module, nf.step) == ("optimizer", "rare", planted)
    if planted < 32:  # a later probe found the NaN in the state, not in any loss
        assert any(p["phase"] == "state" for p in b["probes"])
    assert rep.replayed["drift_step"] is None


def test_a_loss_jump_is_a_bad_step(tmp_path):
    ckpt, caps, losses = bisect_model.train(tmp_path, steps=32, jump_at=20)
    rep = _bisect(ckpt, caps, "1..32")
    assert rep.bisect["first_bad"] == 20 and "median" in rep.bisect["why"]
    assert rep.nonfinite is None and rep.result.loss == pytest.approx(losses[20], rel=1e-6)
    assert rep.bisect["checked_steps"] <= 6


def test_a_clean_range_has_no_bad_step(tmp_path):
    ckpt, caps, _ = bisect_model.train(tmp_path, steps=16, nan_lr_at=15)
    rep = _bisect(ckpt, caps, "1..14")
    assert rep.bisect["first_bad"] is None and rep.exit_code == 0
    assert rep.bisect["checked_steps"] <= 5


def test_a_replay_that_drifts_from_the_run_says_so(tmp_path):
    from spikelens.replay import capture, load_capture

    ckpt, caps, losses = bisect_model.train(tmp_path, steps=8)
    rec = load_capture(caps, 5)
    capture(5, rec["batch"], caps, loss=losses[5] * 1.5, meta=rec["meta"])  # not what the replay computes
    rep = _bisect(ckpt, caps, "1..8")
    assert rep.replayed["drift_step"] == 5
    assert any("drifts from the training run from step 5" in w for w in rep.warnings)


def test_cli_state_dict_and_factory(tmp_path):
    ckpt, caps, _ = bisect_model.train(tmp_path, steps=32, nan_lr_at=11)
    res = run_cli("replay", ckpt, "--module", FACTORY, "--captures", caps, "--bisect", "1..32", "-f", "json")
    assert res.returncode == 1, res.stderr
    data = json.loads(res.stdout)
    assert data["bisect"]["first_bad"] == 11 and data["bisect"]["checked_steps"] <= 6
    assert data["source"]["kind"] == "state_dict" and "optimizer (SGD)" in data["source"]["restored"]
    single = run_cli("replay", ckpt, "--module", FACTORY, "--captures", caps, "--step", "11", "-f", "json")
    assert single.returncode == 1 and json.loads(single.stdout)["nonfinite"]["module"] == "rare"


@pytest.mark.parametrize("span, message", [("9..3", "not after TO"), ("a..b", "FROM..TO"), ("1..40", "no capture")])
def test_bad_spans_are_one_line_errors(tmp_path, span, message, capsys):
    """Through the real entry point in this process (a process start imports torch again:
    CI time); test_cli_state_dict_and_factory runs real processes."""
    ckpt, caps, _ = bisect_model.train(tmp_path, steps=4)
    code, _, err = main_in_process(capsys, "replay", ckpt, "--module", FACTORY, "--captures", caps, "--bisect", span)
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1


def test_bisect_over_a_build_function():
    """The build() contract bisects too: build(FROM) gives the state, later builds their batch."""
    from replay_targets import tiny

    rep = replay(f"{tiny.__file__}:build_diverging", bisect="1..12", device="cpu")
    assert rep.bisect["first_bad"] == 2 and rep.source["kind"] == "build"
    assert (rep.nonfinite.phase, rep.nonfinite.module) == ("forward", "blocks.1.norm")
    clean = replay(f"{tiny.__file__}:build", bisect="1..12", device="cpu")
    assert clean.bisect["first_bad"] is None and clean.exit_code == 0 and clean.bisect["checked_steps"] <= 5


def test_captures_without_a_learning_rate_warn(tmp_path):
    from spikelens.replay import capture, load_capture

    ckpt, caps, _ = bisect_model.train(tmp_path, steps=4)
    rec = load_capture(caps, 2)
    capture(2, rec["batch"], caps, loss=rec["loss"])  # as capture() writes it without meta
    rep = replay(str(ckpt), 3, module=FACTORY, captures=caps, device="cpu")
    assert any("step 2 holds no learning rate" in w for w in rep.warnings)
