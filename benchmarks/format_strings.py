"""How generally the text reader reads logging statements it was never tuned on (#24).

A corpus of real logging statements of training loops, harvested from public repositories
(print / f-strings / %-format / logging / loguru / tqdm postfixes / framework printers), is
kept OUTSIDE the project (default `~/.cache/spikelens-formats/text_formats.jsonl`; one JSON
object a line: repo, path, statement, and `template`, the line the statement prints with
its fields named: `step`/`steps`, `epoch`/`epochs`, `batch`/`batches`, `loss` (the run's
main value), other values; `context`, what the source prints around it: an epoch header,
a tqdm bar, a logging prefix, a table header; `main`, the printed name of the main value).

Each statement is rendered into a 300-record synthetic log (a decaying noisy loss, the
step rising) the way its source prints it, read by spikelens (`api.load`, the whole
discovery path), and sorted into: read with the right step and main value / read wrong
(what was read instead) / refused (the reason spikelens gives).

The statements are split in two halves by a hash of their repository, fixed before any
result is seen: tune on half A only; half B is the honest measure.

    python benchmarks/format_strings.py                 # both halves, a summary
    python benchmarks/format_strings.py --show wrong    # and each miss
    python benchmarks/format_strings.py --only 12 40    # some statements, with their files kept
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import string
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

CORPUS = Path(os.environ.get("SPIKELENS_FORMATS", Path.home() / ".cache/spikelens-formats/text_formats.jsonl"))
N = 300          # records a log
PER_EPOCH = 10   # records an epoch where a statement prints a batch counter
BATCH_EVERY = 10  # batches between two records
STAMP0 = 1_714_560_000  # 2024-05-01 12:00:00 UTC


def half(repo: str) -> str:
    """A or B, by a hash of the repository: fixed before any result is seen."""
    return "A" if hashlib.sha256(repo.encode()).digest()[0] % 2 == 0 else "B"


# ------------------------------------------------------------------ rendering


class Values(dict):
    """The values one record prints, by field name."""


def _fields(template: str) -> set[str]:
    out = set()
    for part in template.split("\n"):
        for _, name, _, _ in string.Formatter().parse(part):
            if name:
                out.add(name.split("!")[0].split(".")[0])
    return out


def _spec_of(template: str, field: str) -> tuple[str, str | None] | None:
    for _, name, spec, conv in string.Formatter().parse(template):
        if name == field:
            return spec or "", conv
    return None


def plan(entry: dict) -> dict:
    """How records map to steps: per batch (an epoch holds PER_EPOCH records) or per epoch."""
    f = _fields(entry["template"]) | _fields(entry.get("context", "").split(":", 1)[-1])
    per_batch = bool(f & {"batch", "batch0", "batchp", "batchp1", "nsamples", "step", "step0", "step2"}) \
        or entry.get("context", "").startswith(("lightning", "keras", "tianshou"))
    if entry.get("context", "").startswith("keras"):
        per_batch = False
    return {"per_batch": per_batch, "fields": f}


def values(k: int, entry: dict, rng: random.Random, per_batch: bool) -> Values:
    """Record k's printed values: a loss decaying with noise, counters rising."""
    x = k / N
    loss = 2.4 * math.exp(-4 * x) + 0.35 + 0.03 * rng.gauss(0, 1)
    acc = min(0.999, 0.5 + 0.45 * (1 - math.exp(-4 * x)) + 0.01 * rng.gauss(0, 1))
    epoch = k // PER_EPOCH + 1 if per_batch else k + 1
    j = k % PER_EPOCH if per_batch else 0
    batches = PER_EPOCH * BATCH_EVERY
    step = (k + 1) * BATCH_EVERY
    v = Values(
        step=step, step0=k * BATCH_EVERY, step2=step * 4, steps=N * BATCH_EVERY,
        epoch=epoch, epoch0=epoch - 1, epochs=N // PER_EPOCH if per_batch else N,
        epochf=(k + 1) / (N / 3),
        batch=(j + 1) * BATCH_EVERY, batch0=j * BATCH_EVERY, batchp=j * BATCH_EVERY, batchp1=j * BATCH_EVERY + 1,
        batches=batches, samples=(j + 1) * BATCH_EVERY * 64 if per_batch else step * 64, nsamples=batches * 64,
        loss=loss, l2=loss * 0.6 + 0.01 * rng.random(), l3=loss * 0.3 + 0.01 * rng.random(),
        l4=loss * 0.1 + 0.005 * rng.random(), vloss=loss * 1.05 + 0.02, acc=acc, acc2=acc * 0.97,
        acc100=acc * 100, lr=1e-3 * (1 - 0.9 * x), gn=1.0 + 0.2 * rng.random(), t=0.3 + 0.02 * rng.random(),
        ms=310 + 5 * rng.random(), ppl=math.exp(loss), pct=int(100 * (j + 1) / PER_EPOCH) if per_batch else int(100 * (k + 1) / N),
        pctf=100 * (k + 1) / N, rate=1234.5 + 10 * rng.random(), ret=20 + 180 * (1 - math.exp(-4 * x)) + 3 * rng.gauss(0, 1),
        tps=7233 + int(50 * rng.random()), tf=123.4 + rng.random(), psnr=20 + 10 * (1 - math.exp(-4 * x)),
        hours=12.3 - x, days=0.5 - x / 3, tsec=12 * (k + 1), tmin=int(3 + x * 100), sen=12345 * (k + 1) + int(500 * math.sin(k * 1.7)),
        wt=float(step), lab=1.0, pred=0.5, feat=15, inst=123, size=640, mem="3.45G", rem=f"{int(60 * (1 - x))}s",
        nloss=-0.1 - 0.8 * (1 - math.exp(-4 * x)) + 0.01 * rng.gauss(0, 1), nvloss=-0.12 - 0.75 * (1 - math.exp(-4 * x)),
        tsince=f"{k // 6}m {k * 7 % 60}s (- {(N - k) // 6}m {k * 3 % 60}s)", bar="▋" * int(50 * (k + 1) / N),
        yepoch=f"{epoch - 1}/{N // PER_EPOCH - 1}", uepoch=f"{epoch}/{N // PER_EPOCH}",
        stamp=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(STAMP0 + 30 * k)) + ",123",
        stamp2=time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(STAMP0 + 30 * k)),
        stamp3=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(STAMP0 + 30 * k)) + ".123",
        stamp4=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(STAMP0 + 30 * k)) + ".123456",
        d2stamp=time.strftime("%m/%d %H:%M:%S", time.gmtime(STAMP0 + 30 * k)),
        absl=time.strftime("%m%d %H:%M:%S", time.gmtime(STAMP0 + 30 * k)) + ".123456 140000000",
    )
    v["loss4"] = round(loss, 4)
    v["acc4"] = round(acc, 4)
    v["loss_t"] = f"tensor({loss:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>)"
    import numpy as np

    v["loss_np"] = str(np.array([loss], dtype=np.float32))
    return v


def printed_main(entry: dict, v: Values) -> float:
    """The main value as the log shows it (its printed precision)."""
    import numpy as np

    tpl = entry["template"]
    for field in ("loss", "loss_t", "loss_np", "loss4", "nloss", "acc", "acc4", "acc100", "ret"):
        got = _spec_of(tpl, field)
        if got is None:
            continue
        spec, conv = got
        if field == "loss_t":
            return round(v["loss"], 4)
        if field == "loss_np":  # what the array prints (`[2.7544847]`), not the float32 widened
            return float(v["loss_np"].strip("[] "))
        text = format(v[field], spec) if spec else str(v[field])
        return float(text.replace(",", ""))
    raise ValueError(f"statement {entry['id']}: no main field in its template")


def _bar(n: int, total: int, extra: str = "", desc: str = "") -> str:
    pct = int(100 * n / total)
    fill = "█" * (pct // 10) + " " * (10 - pct // 10)
    head = f"{desc}: " if desc else ""
    return f"{head}{pct:3d}%|{fill}| {n}/{total} [00:{n % 60:02d}<00:{(total - n) % 60:02d}, {9.87:.2f}it/s{', ' + extra if extra else ''}]"


def _table_box(rows: list[tuple[str, str]]) -> str:
    w1 = max(len(k) for k, _ in rows) + 4
    w2 = max(len(v) for _, v in rows) + 2
    line = "-" * (w1 + w2 + 5)
    body = [f"| {k:<{w1}} | {v:<{w2}}|" for k, v in rows]
    return "\n".join([line, *body, line])


def render(entry: dict) -> tuple[str, list[float], list[int], str]:
    """The log text, the main values in order, the printed global steps (or []), and
    what the step should be checked against ('step', 'epoch', 'order')."""
    rng = random.Random(entry["id"])
    p = plan(entry)
    tpl, ctx = entry["template"], entry.get("context", "plain")
    kind, _, arg = ctx.partition(":")
    out: list[str] = []
    mains, steps = [], []
    fields = p["fields"]
    check = ("step" if fields & {"step", "step0"} and tpl not in ("SB3", "BASELINES") else
             "epoch" if fields & {"epoch", "epoch0", "yepoch", "uepoch"} and not p["per_batch"] else "order")
    prefix = arg if kind == "logging" else ""
    if kind in ("sb3", "baselines"):
        check = "step"
    line_buf: list[str] = []
    for k in range(N):
        v = values(k, entry, rng, p["per_batch"])
        first_of_epoch = (k % PER_EPOCH == 0) if p["per_batch"] else True
        last_of_epoch = (k % PER_EPOCH == PER_EPOCH - 1) if p["per_batch"] else True
        if kind in ("sb3", "baselines"):
            ts = (k + 1) * 2048
            if kind == "sb3":
                rows = [("rollout/", ""), ("   ep_len_mean", f"{200 + k % 7}"), ("   ep_rew_mean", f"{v['ret']:.3g}"),
                        ("time/", ""), ("   fps", "1234"), ("   iterations", str(k + 1)),
                        ("   time_elapsed", str(12 * (k + 1))), ("   total_timesteps", str(ts)),
                        ("train/", ""), ("   approx_kl", f"{0.01 * v['gn']:.7f}"), ("   entropy_loss", f"{-1.38 + 0.001 * k:.3g}"),
                        ("   explained_variance", f"{v['acc']:.3g}"), ("   learning_rate", "0.0003"), ("   loss", f"{v['loss']:.3g}"),
                        ("   n_updates", str(10 * (k + 1))), ("   value_loss", f"{v['l2']:.3g}")]
                mains.append(float(f"{v['loss']:.3g}"))
            else:
                rows = [("eplenmean", f"{200 + k % 7}"), ("eprewmean", f"{v['ret']:.3g}"), ("fps", "1234"),
                        ("loss/approxkl", f"{0.01 * v['gn']:.3g}"), ("loss/policy_loss", f"{-v['l4']:.3g}"),
                        ("loss/value_loss", f"{v['l2']:.3g}"), ("misc/nupdates", str(k + 1)),
                        ("misc/serial_timesteps", str(ts)), ("misc/total_timesteps", str(ts))]
                mains.append(float(f"{-v['l4']:.3g}"))
            steps.append(ts)
            out.append(_table_box(rows) + "\n")
            continue
        text = tpl.format_map(v)
        mains.append(printed_main(entry, v))
        if check == "step":
            steps.append(v["step"] if fields & {"step"} else v["step0"])
        elif check == "epoch":
            steps.append(v["epoch"] if "epoch" in fields or "uepoch" in fields else v["epoch0"])
        pre = prefix.format_map(v) if prefix else ""
        if kind == "epoch_header" and first_of_epoch:
            out.append(arg.format_map(v) + "\n")
        if kind == "table_header" and k % 50 == 0:
            out.append(arg + "\n")
        if kind == "table_once" and k == 0:
            out.append(arg + "\n")
        if kind == "yolo":
            if first_of_epoch:
                out.append("\n" + arg + "\n")
            line_buf.append("\r" + text + ": " + _bar(v["batch"], v["batches"]))
            if last_of_epoch:
                out.append("".join(line_buf) + "\n")
                line_buf = []
            continue
        if kind == "keras":
            out.append(f"Epoch {v['epoch']}/{v['epochs']}\n{text}\n")
            continue
        if kind in ("lightning", "tianshou"):
            n = v["batch"] if p["per_batch"] else k + 1
            if kind == "lightning":
                seg = f"\rEpoch {v['epoch0']}: " + _bar(n, v["batches"], extra="v_num=0, " + text if "v_num" not in text else text)
            else:
                seg = f"\rEpoch #{v['epoch']}: {n * 10}it [00:01, 500.00it/s, {text}]"
            line_buf.append(seg)
            if last_of_epoch:
                out.append("".join(line_buf) + "\n")
                line_buf = []
            continue
        if kind == "tqdm_postfix":
            line_buf.append("\r" + _bar(k + 1, N, extra=text if "=" in text else "loss=" + text, desc=arg))
            if k == N - 1:
                out.append("".join(line_buf) + "\n")
            continue
        if kind == "tqdm_desc":
            line_buf.append("\r" + _bar(k + 1, N, desc=text))
            if k == N - 1:
                out.append("".join(line_buf) + "\n")
            continue
        if kind == "tqdm_epoch_bar":  # a bar over the epoch's batches (its counter restarts), then the line
            b = v["batches"]
            out.append("".join("\r" + _bar(n, b) for n in (1, b // 2, b)) + "\n" + text + "\n")
            continue
        if kind == "tqdm_bar":
            out.append("\r" + _bar(k * 3 + 1, 3 * N) + "\r" + _bar(k * 3 + 2, 3 * N) + text + "\n")
            continue
        if kind == "cr":
            line_buf.append("\r" + text)
            if last_of_epoch:
                out.append("".join(line_buf) + "\n")
                line_buf = []
            continue
        if kind == "cr_all":
            line_buf.append("\r" + text)
            if k == N - 1:
                out.append("".join(line_buf) + "\n")
            continue
        if kind == "box":
            rule = "-" * max(len(r) for r in text.split("\n"))
            text = "\n".join([rule, text, rule])
        body = "\n".join(pre + part for part in text.split("\n"))
        out.append(body + "\n")
        if kind == "epoch_footer" and last_of_epoch:
            out.append(arg.format_map(v) + ("" if arg.endswith("\n") else "\n"))
    return "".join(out), mains, steps, check


# ------------------------------------------------------------------ judging


def judge(entry: dict, folder: Path) -> dict:
    """Render, read, and say how it went."""
    from spikelens import api, diagnostics
    from spikelens.errors import SpikelensError
    from spikelens.frame import infer_role

    text, mains, steps, check = render(entry)
    path = folder / f"s{entry['id']:03d}.log"
    path.write_text(text, encoding="utf-8")
    res = {"id": entry["id"], "repo": entry["repo"], "half": half(entry["repo"]), "tool": entry.get("tool", "")}
    try:
        with diagnostics.collecting() as diag:
            frame = api.load(path)
    except SpikelensError as exc:
        return {**res, "verdict": "refused", "why": str(exc).replace(str(path), "<log>")[:300]}
    except Exception as exc:  # a crash is a finding of its own
        return {**res, "verdict": "crashed", "why": f"{type(exc).__name__}: {exc}"[:300]}
    if frame.height == 0:
        return {**res, "verdict": "refused", "why": "; ".join(diag.lines)[:300] or "nothing read"}
    want = mains
    best, best_n = None, -1
    for (metric,), g in frame.group_by(["metric"]):
        g = g.sort(["segment", "seq"]) if "seq" in g.columns else g
        got = g.get_column("value").to_list()
        same = sum(1 for a, b in zip(got, want) if _close(a, b))
        if len(got) == len(want) and same == len(want):
            st = g.get_column("step").to_list()
            ok = (st == steps) if check == "step" else (
                (st == steps) or _rising(st)) if check == "epoch" else _rising(st)
            if ok:
                return {**res, "verdict": "read", "metric": metric, "role": infer_role(metric)}
            res.update(step_issue=f"steps {st[:4]}.. want {steps[:4] or 'rising'}")
        if same > best_n:
            best, best_n = metric, same
    got_metrics = sorted(frame.get_column("metric").unique().to_list())
    return {**res, "verdict": "wrong", "best": best, "matched": f"{best_n}/{len(want)}",
            "metrics": got_metrics[:12], **({"step_issue": res["step_issue"]} if "step_issue" in res else {})}


def _close(a: float | None, b: float) -> bool:
    if a is None:
        return False
    return abs(a - b) <= 1e-9 * max(1.0, abs(b)) or (a == b)


def _rising(st: list) -> bool:
    return all(x is not None for x in st) and all(b > a for a, b in zip(st, st[1:]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--only", type=int, nargs="*", help="statement ids (their logs are kept and their paths printed)")
    ap.add_argument("--show", choices=("wrong", "all"), help="print each miss (or every result)")
    ap.add_argument("--json", type=Path, help="write every result here")
    args = ap.parse_args()
    if not args.corpus.exists():
        print(f"no statement corpus at {args.corpus} (it is kept outside the project)", file=sys.stderr)
        return 2
    entries = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.only:
        entries = [e for e in entries if e["id"] in set(args.only)]
    keep = bool(args.only)
    tmp = Path(tempfile.mkdtemp(prefix="spikelens-formats-"))
    results = []
    for e in entries:
        sub = tmp / f"s{e['id']:03d}"
        sub.mkdir()
        results.append(judge(e, sub))
        if keep:
            print(f"{e['id']}: {sub}")
    for h in ("A", "B"):
        rs = [r for r in results if r["half"] == h]
        if not rs:
            continue
        c = Counter(r["verdict"] for r in rs)
        repos = len({r["repo"] for r in rs})
        print(f"half {h}: {len(rs)} statements from {repos} repositories: read right {c['read']} "
              f"({100 * c['read'] / len(rs):.1f}%), read wrong {c['wrong']}, refused {c['refused']}, crashed {c['crashed']}")
    if args.show:
        for r in results:
            if args.show == "all" or r["verdict"] != "read":
                print(json.dumps(r, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
