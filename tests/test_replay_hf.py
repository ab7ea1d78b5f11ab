"""Zero-code replay of a real `transformers.Trainer` run: the capture callback inside the real
Trainer, `spikelens replay CHECKPOINT --step N` with no user code, and `--bisect` over 32
captured steps. One tiny GPT-2 run (random weights from a config) serves the whole module."""
from __future__ import annotations

import json
import math

import jsonschema
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from replay_targets import hf_run  # noqa: E402

from conftest import main_in_process, run_cli, tree_hashes  # noqa: E402
from spikelens.replay import captured_steps, load_capture, replay  # noqa: E402
from spikelens.replay.schema import REPLAY_SCHEMA  # noqa: E402

BAD, SAVE_AT, STEPS = 23, 4, 36  # captures 5..36 after checkpoint-4: 32 steps


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return hf_run.train(tmp_path_factory.mktemp("hf") / "out", steps=STEPS, bad_step=BAD, save_at=SAVE_AT)


def _logged(run) -> dict[int, float]:
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    return {e["step"]: e["loss"] for e in history if "loss" in e}


def test_the_callback_captured_every_step_with_its_recipe(run):
    caps = run / "spikelens-captures"
    assert captured_steps(caps) == list(range(1, STEPS + 1))
    bad = load_capture(caps, BAD)
    assert math.isnan(bad["loss"]) and "nan" in bad["reason"]
    assert (bad["batch"][0]["kwargs"]["labels"] == -100).all()
    assert bad["meta"]["trainer"] == "transformers" and bad["meta"]["max_grad_norm"] == 1.0
    # the learning rate the update of each step used, as the Trainer logged it
    logged_lr = {e["step"]: e["learning_rate"] for e in json.loads((run / "trainer_state.json").read_text())
                 ["log_history"] if "learning_rate" in e}
    for s in (5, BAD, STEPS):
        assert load_capture(caps, s)["meta"]["lr"][0] == pytest.approx(logged_lr[s], rel=1e-9)
    assert math.isnan(_logged(run)[BAD])


def test_zero_code_replay_names_the_module_and_op_of_the_nan(run):
    before = tree_hashes(run)
    # on the CPU the run trained on: its losses are matched bit for bit (a GPU's arithmetic drifts,
    # which test_replay_gpu checks apart)
    res = run_cli("replay", run / f"checkpoint-{SAVE_AT}", "--step", str(BAD),
                  "--captures", run / "spikelens-captures", "--device", "cpu", "--format", "json")
    assert res.returncode == 1, res.stderr
    data = json.loads(res.stdout)
    jsonschema.validate(data, REPLAY_SCHEMA)
    nf = data["nonfinite"]
    assert (nf["phase"], nf["module"], nf["module_type"], nf["op"]) == ("forward", "(root)", "GPT2LMHeadModel", "div")
    assert "loss_utils.py" in nf["where"] and "num_items_in_batch" in nf["where"]
    src = data["source"]
    assert src["kind"] == "transformers" and src["at_step"] == SAVE_AT
    assert {"weights", "optimizer (AdamW)", "scheduler (learning rate)", "RNG"} <= set(src["restored"])
    # steps 5..22 replayed plain to reach the state of step 22, each equal to the run's own loss
    assert data["replayed"]["plain_steps"] == BAD - SAVE_AT - 1 and data["replayed"]["drift_step"] is None
    assert data["logged"]["reproduced"] is True
    assert "Traceback" not in res.stderr
    assert tree_hashes(run) == before  # nothing written into the user's run folder


def test_replayed_losses_equal_the_logged_ones(run):
    """From checkpoint-4 through step 22: every replayed loss is the Trainer's logged loss (the
    optimizer, scheduler, RNG and clipping are the run's, so the trajectory is the run's)."""
    rep = replay(str(run / f"checkpoint-{SAVE_AT}"), 22, device="cpu", window=2, logdir=run, metric="loss")
    assert rep.nonfinite is None and rep.exit_code == 0
    logged = _logged(run)
    assert [p["step"] for p in rep.window] == [20, 21, 22]
    for p in rep.window:
        assert p["loss"] == pytest.approx(logged[p["step"]], rel=1e-6)
    assert rep.logged["reproduced"] is True and rep.logged["rel_diff"] < 1e-6
    assert rep.replayed["compared_losses"] == 22 - SAVE_AT and rep.replayed["max_rel_diff"] < 1e-6
    assert rep.result.grad_norm > 0 and rep.optimizer == "AdamW"


def test_bisect_finds_the_planted_step_among_32(run):
    rep = replay(str(run / f"checkpoint-{SAVE_AT}"), bisect=f"{SAVE_AT + 1}..{STEPS}", device="cpu")
    b = rep.bisect
    assert (b["from"], b["to"]) == (5, 36) and b["first_bad"] == BAD and rep.exit_code == 1
    assert b["checked_steps"] <= 6 and len(b["probes"]) == b["checked_steps"]
    assert rep.nonfinite.op == "div" and rep.nonfinite.step == BAD
    assert b["plain_steps"] <= 2 * 32


def test_a_step_the_checkpoint_already_holds_is_an_error(run, capsys):
    # the CLI's entry point in this process: a process start imports torch and transformers
    # again (CI time); test_zero_code_replay_names_the_module_and_op_of_the_nan runs a real one
    code, _, err = main_in_process(capsys, "replay", run / f"checkpoint-{SAVE_AT}", "--step", "3",
                                   "--captures", run / "spikelens-captures")
    assert code == 2
    assert "holds the updates up to step 4" in err and len(err.strip().splitlines()) == 1


def test_gradient_accumulation_and_llama(tmp_path):
    """Two micro-batches a step (the Trainer normalises each by the step's token count and sums
    them) on a tiny Llama: the replayed step losses are the logged ones."""
    run = hf_run.train(tmp_path / "out", steps=6, bad_step=None, save_at=2, arch="llama", accumulate=2)
    assert len(load_capture(run / "spikelens-captures", 3)["batch"]) == 2
    rep = replay(str(run / "checkpoint-2"), 6, device="cpu", window=3)
    logged = _logged(run)
    assert [p["step"] for p in rep.window] == [3, 4, 5, 6]
    for p in rep.window:
        assert p["loss"] == pytest.approx(logged[p["step"]], rel=1e-5)
    assert rep.replayed["drift_step"] is None and rep.source["restored"][1] == "optimizer (AdamW)"


def _copy_checkpoint(run, tmp_path):
    import shutil

    ckpt = tmp_path / f"checkpoint-{SAVE_AT}"
    shutil.copytree(run / f"checkpoint-{SAVE_AT}", ckpt)
    return ckpt


def test_broken_checkpoint_folders_are_one_line_errors(run, tmp_path, capsys):
    from spikelens.errors import ReplayError

    caps = run / "spikelens-captures"
    ckpt = _copy_checkpoint(run, tmp_path)
    config = json.loads((ckpt / "config.json").read_text())
    (ckpt / "config.json").write_text(json.dumps({**config, "architectures": ["MyOwnLM"]}))
    with pytest.raises(ReplayError, match=r"config.json: architecture MyOwnLM is not a transformers class"):
        replay(str(ckpt), SAVE_AT + 1, captures=caps, device="cpu")
    (ckpt / "config.json").write_text(json.dumps(config))
    (ckpt / "adapter_config.json").write_text("{}")
    with pytest.raises(ReplayError, match="PEFT adapter"):
        replay(str(ckpt), SAVE_AT + 1, captures=caps, device="cpu")
    (ckpt / "adapter_config.json").unlink()
    (ckpt / "model.safetensors").unlink()
    code, _, err = main_in_process(capsys, "replay", ckpt, "--step", str(SAVE_AT + 1), "--captures", caps)
    assert code == 2 and "no weights" in err and len(err.strip().splitlines()) == 1


def test_an_unreadable_optimizer_state_replays_without_the_update(run, tmp_path):
    ckpt = _copy_checkpoint(run, tmp_path)
    (ckpt / "optimizer.pt").write_bytes(b"not a torch file")
    rep = replay(str(ckpt), SAVE_AT + 1, captures=run / "spikelens-captures", device="cpu")
    assert rep.optimizer is None and rep.nonfinite is None
    assert any("optimizer.pt: cannot be loaded with weights_only=True" in w for w in rep.warnings)
    assert rep.result.loss == pytest.approx(_logged(run)[SAVE_AT + 1], rel=1e-6)  # the weights are the run's
