"""A real `transformers.Trainer` run for the zero-code replay tests: a tiny GPT-2 built from a
config (random weights, nothing downloaded), synthetic tokens, the capture callback on every
step, one checkpoint, and a planted bad batch.

The plant is a real failure of SFT pipelines: a batch whose labels are all -100 (every
completion token masked or truncated away). The Trainer passes `num_items_in_batch` = 0
and the model's loss is 0/0 = NaN, born in transformers' `fixed_cross_entropy` division.
"""
from __future__ import annotations

from pathlib import Path

import torch

VOCAB, SEQ, BATCH = 32, 8, 2


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int):
        self.ids = torch.randint(0, VOCAB, (n, SEQ), generator=torch.Generator().manual_seed(0))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i].clone()}


class CollateWithBadBatch:
    """Stacks the examples; the `bad`-th batch it builds has every label masked."""

    def __init__(self, bad: int | None):
        self.calls, self.bad = 0, bad

    def __call__(self, examples):
        self.calls += 1
        batch = {k: torch.stack([e[k] for e in examples]) for k in examples[0]}
        if self.calls == self.bad:
            batch["labels"][:] = -100
        return batch


EVERY_STEP = {"every": 1, "before": 0, "after": 0}


def train(out: Path, *, steps: int, bad_step: int | None, save_at: int | tuple[int, ...], arch: str = "gpt2",
          accumulate: int = 1, capture: dict | None = EVERY_STEP) -> Path:
    """Train with hf_callback(**capture) into OUT (every step by default; `{}` for the callback's
    own defaults); returns OUT (checkpoint-N for each N of SAVE_AT, spikelens-captures,
    trainer_state.json with one logged loss per step)."""
    import transformers
    from transformers import Trainer, TrainerCallback, TrainingArguments

    from spikelens.replay import hf_callback

    class SaveAt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            control.should_save = state.global_step in (save_at if isinstance(save_at, tuple) else (save_at,))

    torch.manual_seed(0)
    model = _model(transformers, arch)
    args = TrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=BATCH,
                             save_strategy="no", logging_steps=1, logging_nan_inf_filter=False, report_to=[],
                             learning_rate=1e-3, use_cpu=True, seed=0, disable_tqdm=True,
                             gradient_accumulation_steps=accumulate)
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(steps * BATCH * accumulate),
                      data_collator=CollateWithBadBatch(bad_step),
                      callbacks=[SaveAt(), hf_callback(out / "spikelens-captures", **(capture or {}))])
    trainer.train()
    trainer.state.save_to_json(str(out / "trainer_state.json"))
    return out


def _model(transformers, arch: str):
    if arch == "llama":
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=16,
                                       bos_token_id=0, eos_token_id=0, pad_token_id=0)
        return transformers.LlamaForCausalLM(cfg)
    cfg = transformers.GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=16, n_layer=2, n_head=2,
                                  bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(cfg)
