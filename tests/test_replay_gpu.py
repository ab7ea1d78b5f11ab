"""`spikelens replay --device cuda`: the same plants on a GPU, and a NaN that exists only in
half precision. Skipped without CUDA (CI has none); run on a GPU machine with `pytest -m gpu`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]

from replay_targets import tiny  # noqa: E402

from conftest import run_cli  # noqa: E402
from spikelens.replay import capture, load_capture, replay  # noqa: E402

TINY = Path(tiny.__file__)


def target(name: str) -> str:
    return f"{TINY}:{name}"


def test_auto_picks_cuda_and_healthy_step_is_finite():
    rep = replay(target("build"), 4, device="auto")
    assert rep.device.startswith("cuda") and rep.nonfinite is None and rep.result.grad_norm > 0


def test_forward_and_backward_plants_on_cuda():
    fwd = replay(target("build_forward_nan"), 4, device="cuda").nonfinite
    assert (fwd.phase, fwd.module, fwd.op) == ("forward", "blocks.1.mlp", "log")
    bwd = replay(target("build_backward_nan"), 4, device="cuda").nonfinite
    assert (bwd.phase, bwd.module, bwd.op) == ("backward", "blocks.0.mlp", "SqrtBackward0")


@pytest.mark.parametrize("dtype, finite", [("float32", True), ("bfloat16", True), ("float16", False)])
def test_overflow_only_in_float16(dtype, finite):
    rep = replay(target("build_fp16_overflow"), 4, device="cuda", dtype=dtype)
    assert (rep.nonfinite is None) is finite
    if not finite:
        assert (rep.nonfinite.phase, rep.nonfinite.module, rep.nonfinite.op) == ("forward", "blocks.1.mlp", "mul")
        assert "Inf" in rep.nonfinite.detail


def test_capture_from_cuda_lands_on_cpu(tmp_path):
    batch = {k: v.cuda() for k, v in tiny.batch_for_step(2).items()}
    torch.cuda.manual_seed(7)
    capture(2, batch, tmp_path)
    rec = load_capture(tmp_path, 2)
    assert rec["batch"]["x"].device.type == "cpu" and rec["rng"]["cuda"]
    assert torch.equal(rec["batch"]["x"], batch["x"].cpu())


def test_cli_cuda_float16_exit_1_json():
    res = run_cli("replay", target("build_fp16_overflow"), "--step", "4", "--device", "cuda",
                  "--dtype", "float16", "-f", "json")
    assert res.returncode == 1, res.stderr
    data = json.loads(res.stdout)
    assert data["device"].startswith("cuda") and data["dtype"] == "float16"
    assert data["nonfinite"]["module"] == "blocks.1.mlp"
    assert data["loss"] in ("NaN", "Infinity", "-Infinity")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_zero_code_hf_checkpoint_on_cuda_in_half_precision(tmp_path, dtype):
    """A Trainer run (trained on the CPU), its checkpoint and captures replayed on CUDA under
    autocast: the planted all-masked batch is still named, and the replay says how far its
    losses are from the run's (different arithmetic: a drift is reported, never hidden)."""
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    from replay_targets import hf_run

    run = hf_run.train(tmp_path / "out", steps=12, bad_step=9, save_at=4)
    rep = replay(str(run / "checkpoint-4"), 9, device="cuda", dtype=dtype)
    assert rep.device.startswith("cuda") and rep.dtype == dtype
    nf = rep.nonfinite
    assert (nf.phase, nf.module, nf.op, nf.step) == ("forward", "(root)", "div", 9)
    assert rep.replayed["compared_losses"] == 5
    assert (rep.replayed["drift_step"] is None) == (rep.replayed["max_rel_diff"] <= 1e-3)
    found = replay(str(run / "checkpoint-4"), bisect="5..12", device="cuda", dtype=dtype)
    assert found.bisect["first_bad"] == 9 and found.bisect["checked_steps"] <= 4


@pytest.mark.parametrize("flag", ["fused", "capturable"])
def test_placed_optimizer_keeps_step_where_its_kernel_wants_it(flag):
    """A fused or capturable AdamW saved on the CPU and replayed on CUDA: its step counters go to
    the GPU with the moments (torch's own rule), so the first optimizer step runs; a plain AdamW
    keeps them on the CPU."""
    from spikelens.replay.run import place
    from spikelens.replay.target import ReplayTarget

    def trained(**options):
        """A step's state as a checkpoint of a fused or capturable AdamW holds it (its saved groups
        say so), loaded on the CPU as a replay loads a checkpoint."""
        model = torch.nn.Linear(4, 2)
        first = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(torch.ones(3, 4)).sum().backward()
        first.step()
        saved = first.state_dict()
        for group in saved["param_groups"]:
            group.update(options)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, **options)
        opt.load_state_dict(saved)
        return ReplayTarget(model=model, batch={"x": torch.ones(3, 4)}, optimizer=opt,
                            loss_fn=lambda m, b: m(b["x"]).sum())

    special = place(trained(**{flag: True}), torch.device("cuda"), torch)
    assert all(s["step"].device.type == "cuda" for s in special.optimizer.state.values())
    special.model(special.batch["x"]).sum().backward()
    special.optimizer.step()
    plain = place(trained(), torch.device("cuda"), torch)
    assert all(s["step"].device.type == "cpu" for s in plain.optimizer.state.values())
