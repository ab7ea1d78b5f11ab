"""The cost of `spikelens replay`'s checks against the plain training step they replay.

    python benchmarks/bench_replay.py [--device cpu|cuda] [--dtype float32|bfloat16|float16]
                                      [--size tiny|small|medium] [--repeats 7] [--threads 1]

One GPT-2 built by transformers from a config (random weights, nothing downloaded), AdamW
with the Trainer's clipping at 1.0, one batch of tokens. Each mode runs the same step
`--repeats` times (after one warm-up) and the median is printed, as wall time and as the
process's CPU time (on a shared machine wall time swings with the load):

- plain step: zero_grad, forward, backward, clip, optimizer step (what the trainer ran);
- anomaly mode only: the plain step inside `torch.autograd.detect_anomaly(check_nan=True)`
  (the "+50%" users report);
- replay default: `run_step` as `spikelens replay` runs a step: state and batch checks, a
  plain pass, the gradient table, the update ratio, the state after the update;
- replay --thorough: every op and module watched and anomaly mode, in one pass;
- replay of a NaN step: the default mode on a batch whose labels are all -100 (0/0 loss):
  the plain pass sees the NaN and the watched pass runs to name the op.

The target: the default mode under 2x the plain step.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

SIZES = {  # n_embd, n_layer, n_head, seq, batch, vocab
    "tiny": (16, 2, 2, 8, 2, 32),
    "small": (128, 4, 4, 128, 8, 1024),
    "medium": (384, 6, 6, 256, 8, 8192),
}
TARGET_RATIO = 2.0


def _setup(size: str, device: str, torch):
    import transformers

    n_embd, n_layer, n_head, seq, batch, vocab = SIZES[size]
    cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=n_embd, n_layer=n_layer,
                                  n_head=n_head, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0)).to(device)
    good = {"input_ids": ids, "labels": ids.clone()}
    bad = {"input_ids": ids, "labels": torch.full_like(ids, -100), "num_items_in_batch": torch.tensor(0, device=device)}
    params = sum(p.numel() for p in model.parameters())
    return model, opt, good, bad, params


def _time(fn, repeats: int, sync) -> tuple[float, float]:
    fn()
    sync()
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        sync()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    ap.add_argument("--size", default="small", choices=tuple(SIZES))
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: steadier on a shared machine)")
    args = ap.parse_args(argv)

    import warnings

    import torch

    from spikelens.replay.run import autocast, run_step

    warnings.filterwarnings("ignore")  # anomaly mode's "enabled" warning on every call
    import transformers

    transformers.utils.logging.set_verbosity_error()
    from spikelens.replay.target import ReplayTarget

    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    model, opt, good, bad, params = _setup(args.size, args.device, torch)
    loss_fn = lambda m, b: m(**b).loss  # noqa: E731

    def plain():
        opt.zero_grad(set_to_none=True)
        with autocast(dev, args.dtype, torch):
            loss = loss_fn(model, good)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def anomaly():
        with torch.autograd.detect_anomaly(check_nan=True):
            plain()

    def replay(batch, thorough):
        target = ReplayTarget(model=model, batch=batch, loss_fn=loss_fn, optimizer=opt, max_grad_norm=1.0)
        return lambda: run_step(target, 1, device=dev, dtype=args.dtype, torch=torch, thorough=thorough)

    def nan_step():
        # the NaN step's update would break the weights for the next repeat: keep them
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        replay(bad, False)()
        model.load_state_dict(state)

    modes = [("plain step", plain), ("anomaly mode only", anomaly), ("replay default", replay(good, False)),
             ("replay --thorough", replay(good, True)), ("replay of a NaN step", nan_step)]
    print(f"GPT-2 {args.size} ({params / 1e6:.2f}M parameters, batch {SIZES[args.size][4]} x "
          f"{SIZES[args.size][3]} tokens) on {dev} {args.dtype}, torch {torch.__version__}, "
          f"{args.threads} thread(s), median of {args.repeats}")
    base = None
    print(f"{'mode':<24}{'wall ms':>10}{'cpu ms':>10}{'x plain':>9}")
    results = {}
    for name, fn in modes:
        wall, cpu = _time(fn, args.repeats, sync)
        ref = wall if dev.type == "cuda" else cpu
        base = base or ref
        results[name] = ref / base
        print(f"{name:<24}{wall * 1e3:>10.1f}{cpu * 1e3:>10.1f}{ref / base:>9.2f}")
    ok = results["replay default"] < TARGET_RATIO
    print(f"default mode {'under' if ok else 'OVER'} {TARGET_RATIO:g}x the plain step "
          f"({'cpu' if dev.type == 'cpu' else 'wall'} time)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
