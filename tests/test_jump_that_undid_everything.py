"""A jump that never came back and settled flat at chance, or at or above where the loss began,
undid everything the run had learned (#25): a divergence at the jump, not a spike (a QLoRA fine-tune
whose loss went 1.64 -> 11.8 at step 2 and sat at ln 32000 to the end). A jump that settled well
below where the loss began stays a spike that never came back. Written as Hugging Face's Trainer
writes trainer_state.json (fixtures/writers/hf.py)."""
from __future__ import annotations

import math

from fixtures.writers import hf
from spikelens import api, diagnostics


def _findings(tmp_path, name: str, losses: list[float]) -> list:
    history = [{"epoch": round(s / 100, 4), "grad_norm": 1.0, "learning_rate": 2e-4, "loss": round(v, 4), "step": s}
               for s, v in enumerate(losses, start=1)]
    path = tmp_path / name / "trainer_state.json"
    hf.save_to_json(path, hf.state(history, global_step=len(losses), max_steps=len(losses)))
    with diagnostics.collecting():
        report = api.analyze(path)
    return [f for r in report.runs for f in r.findings if f.kind in ("spike", "divergence")]


def test_a_jump_that_settled_at_chance_is_a_divergence(tmp_path, no_workers):
    chance = math.log(32000)
    (f,) = _findings(tmp_path, "chance", [1.637, 11.807, 11.605, 10.383] + [chance] * 8)
    assert f.kind == "divergence" and f.code == "SL202" and f.severity == "error" and f.start_step <= 2
    assert f.evidence["all_progress_undone"] and "chance" in f.message and "not a spike" in f.message


def test_a_jump_that_settled_below_where_the_loss_began_stays_a_spike(tmp_path, no_workers):
    """From 6.0 down to 1.5, then a jump to 4.4 that stayed: a spike that never came back."""
    fall = [1.5 + 4.5 * math.exp(-i / 3) + 0.01 * (-1) ** i for i in range(40)]
    found = _findings(tmp_path, "below", fall + [4.4 + 0.01 * (-1) ** i for i in range(40)])
    assert found and all(f.kind == "spike" and not f.evidence.get("all_progress_undone") for f in found)
