"""Capture → replay round trips, RNG restore, weights_only safety, and the HF / Lightning
callbacks driven with stand-in trainer objects (the real Trainers drive them in
test_replay_hf.py and test_replay_lightning.py)."""
from __future__ import annotations

import random
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from replay_targets import tiny  # noqa: E402

from spikelens.errors import ReplayError  # noqa: E402
from spikelens.replay import (build_from_captures, capture, captured_batch, captured_steps,  # noqa: E402
                              hf_callback, lightning_callback, load_capture, replay, restore_rng)
from spikelens.replay.callbacks import CaptureTrigger, hf_loss_fn  # noqa: E402

Pair = namedtuple("Pair", "a b")


def _trained(steps: int = 3):
    model, opt = tiny.make()
    for s in range(steps):
        opt.zero_grad()
        tiny.mse(model, tiny.batch_for_step(s)).backward()
        opt.step()
    return model, opt


def test_capture_round_trip_replays_the_same_loss(tmp_path):
    model, opt = _trained()
    batch = tiny.batch_for_step(3)
    expected = tiny.mse(model, batch).item()
    path = capture(3, batch, tmp_path / "cap", model=model, optimizer=opt, loss=expected)
    assert path.name == "step_00000003.pt" and captured_steps(tmp_path / "cap") == [3]

    build = build_from_captures(tmp_path / "cap", lambda: tiny.Tiny(), tiny.mse,
                                lambda m: torch.optim.SGD(m.parameters(), lr=0.05))
    rep = replay(build, 3, device="cpu")
    assert rep.nonfinite is None
    assert rep.result.loss == pytest.approx(expected, rel=1e-6)
    assert load_capture(tmp_path / "cap", 3)["loss"] == pytest.approx(expected)


def test_captured_weights_or_a_checkpoint(tmp_path):
    model, _ = _trained(2)
    capture(2, tiny.batch_for_step(2), tmp_path)  # batch only, no weights in the capture
    ckpt = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict()}, ckpt)
    build = build_from_captures(tmp_path, lambda: tiny.Tiny(), tiny.mse)
    with_ckpt = replay(build, 2, device="cpu", checkpoint=ckpt).result.loss
    assert with_ckpt == pytest.approx(tiny.mse(model, tiny.batch_for_step(2)).item(), rel=1e-6)
    torch.manual_seed(123)
    fresh = replay(build, 2, device="cpu").result.loss  # fresh init weights: another loss
    assert fresh != pytest.approx(with_ckpt, rel=1e-3)


def test_nested_batch_structure_and_rng_restore(tmp_path):
    batch = {"x": torch.randn(2, 3), "pair": Pair(torch.ones(1), [torch.zeros(2), 7]), "name": "b"}
    torch.manual_seed(5)
    np.random.seed(5)
    random.seed(5)
    capture(11, batch, tmp_path)
    want = (torch.rand(3), np.random.rand(3), random.random())
    torch.rand(10), np.random.rand(10), random.random()  # move every RNG on
    got = captured_batch(tmp_path, 11)  # restores the RNG states of capture time
    assert torch.equal(torch.rand(3), want[0])
    assert np.array_equal(np.random.rand(3), want[1]) and random.random() == want[2]
    assert torch.equal(got["x"], batch["x"]) and got["name"] == "b"
    assert torch.equal(got["pair"][1][0], torch.zeros(2)) and got["pair"][1][1] == 7
    assert got["x"].device.type == "cpu"


def test_capture_is_loaded_weights_only(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("unpickled!",))

    torch.save({"format": "spikelens.capture/1", "step": 1, "batch": Evil()}, tmp_path / "step_00000001.pt")
    with pytest.raises(ReplayError, match="step_00000001.pt: not a readable capture"):
        load_capture(tmp_path, 1)


def test_missing_and_foreign_captures(tmp_path):
    capture(4, {"x": torch.zeros(1)}, tmp_path)
    with pytest.raises(ReplayError, match=r"no capture of step 5 \(captured steps: 4\)"):
        load_capture(tmp_path, 5)
    torch.save({"some": torch.zeros(1)}, tmp_path / "step_00000009.pt")
    with pytest.raises(ReplayError, match="not a spikelens capture"):
        load_capture(tmp_path, 9)
    (tmp_path / "step_00000010.pt").write_bytes(b"\x00garbage")
    with pytest.raises(ReplayError, match="step_00000010.pt"):
        load_capture(tmp_path, 10)


def test_rng_state_without_numpy_key_is_tolerated():
    restore_rng({"rng": {"torch": torch.get_rng_state(), "cuda": None, "numpy": None, "python": None}})


# ---------------------------------------------------------------- trigger and callbacks


def test_trigger_fires_on_jumps_nonfinite_and_every_n():
    trig = CaptureTrigger(factor=3.0, window=10, min_history=3)
    assert [trig.reason(s, v) for s, v in enumerate([9.0, 1.0, 1.0])] == [None, None, None]  # no history yet
    assert trig.reason(3, 1.0) is None
    assert trig.reason(4, 2.9) is None  # median of 9, 1, 1, 1 is 1: 2.9 < 3 × 1
    assert "3 × running median 1" in trig.reason(5, 3.5)
    assert "nan" in trig.reason(6, float("nan"))
    every = CaptureTrigger(every=4)
    assert [s for s in range(1, 13) if every.reason(s, 1.0)] == [4, 8, 12]


class HFLike(torch.nn.Module):
    """A model called like a transformers model: keyword inputs, output with `.loss`."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = tiny.Tiny()

    def forward(self, x=None, labels=None, num_items_in_batch=None):
        pred = self.net(x)
        return SimpleNamespace(loss=torch.nn.functional.mse_loss(pred, labels), logits=pred)


def _hf_batch(step: int) -> dict:
    b = tiny.batch_for_step(step, scale=40.0 if step == 12 else 1.0)  # step 12: a bad batch
    return {"x": b["x"], "labels": b["y"]}


def test_hf_callback_captures_around_a_loss_jump(tmp_path):
    model = HFLike()
    cb = hf_callback(tmp_path, factor=3.0, before=1, after=1)
    state, args, control = SimpleNamespace(global_step=0), SimpleNamespace(), SimpleNamespace()
    cb.on_train_begin(args, state, control, model=model)
    for _ in range(20):
        cb.on_step_begin(args, state, control)
        for _micro in range(2):  # gradient accumulation: two forwards per step
            model.train()
            model(**_hf_batch(state.global_step + 1))
        state.global_step += 1
        cb.on_step_end(args, state, control)
        model.eval()
        model(**_hf_batch(99))  # an evaluation forward between steps is not captured
    cb.on_train_end(args, state, control)
    assert captured_steps(tmp_path) == [11, 12, 13]
    reasons = dict(cb.captured)
    assert "running median" in reasons[12] and "before step 12" in reasons[11] and "after" in reasons[13]
    rec = load_capture(tmp_path, 12)
    assert len(rec["batch"]) == 2 and set(rec["batch"][0]["kwargs"]) == {"x", "labels"}
    # the captured micro-batches replay to the loss the callback saw
    build = build_from_captures(tmp_path, HFLike, hf_loss_fn)
    assert replay(build, 12, device="cpu").result.loss == pytest.approx(rec["loss"], rel=1e-5)
    assert not model._forward_hooks  # hook removed at train end


def test_lightning_callback_every_n_steps(tmp_path):
    cb = lightning_callback(tmp_path, every=5, before=0, after=0)
    trainer = SimpleNamespace(global_step=0)
    for i in range(12):
        batch = tiny.batch_for_step(i)
        cb.on_train_batch_start(trainer, None, batch, i)
        trainer.global_step += 1  # Lightning counts the optimizer step before the batch-end hook
        cb.on_train_batch_end(trainer, None, {"loss": torch.tensor(1.0 + i / 100)}, batch, i)
    assert captured_steps(tmp_path) == [0, 5, 10]
    assert torch.equal(load_capture(tmp_path, 5)["batch"]["x"], tiny.batch_for_step(5)["x"])


def test_a_failing_capture_never_stops_training(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cb = lightning_callback(blocker, every=1, before=0, after=0)
    from spikelens import diagnostics

    with diagnostics.collecting() as diag:
        cb.on_train_batch_start(SimpleNamespace(global_step=3), None, {"x": torch.zeros(1)}, 0)
        cb.on_train_batch_end(SimpleNamespace(global_step=4), None, torch.tensor(1.0), {"x": torch.zeros(1)}, 0)
    assert cb.captured == [] and any("capture of step 3" in line for line in diag.lines)


def test_hf_loss_fn_takes_a_plain_dict_batch_and_sums_normalised_micro_batches():
    model = HFLike()
    b = _hf_batch(3)
    assert hf_loss_fn(model, b).item() == pytest.approx(model(**b).loss.item())
    micro = [{"args": [], "kwargs": {**_hf_batch(s), "num_items_in_batch": 32}} for s in (1, 2)]
    summed = sum(model(**mb["kwargs"]).loss.item() for mb in micro)
    assert hf_loss_fn(model, micro).item() == pytest.approx(summed)  # the Trainer sums them then
    plain = [{"args": [], "kwargs": _hf_batch(s)} for s in (1, 2)]
    assert hf_loss_fn(model, plain).item() == pytest.approx(summed / 2)  # ... else averages them
