"""Invariance benchmark: a text log reads the same whatever decoration a person reads through.

usage: python benchmarks/realworld/perturb.py [--sample N] [--seed S] [--only ID ...] [--transforms T ...]
                                              [--max-lines N] [--out FILE] [--show]

For each dev TEXT run that reads today (all its files `.log/.txt/.out/.err` or suffixless), every
transformation below is applied alone to copies of its files in a temp folder (never the cache), and the
copy is read again with `spikelens.load_runs`: it reads the same when it has as many runs, each with a
step count within 2% of the original's and the original main loss's (step, value) pairs (at least 98%
of them) in its main loss or in the metric of the same name. An unseen tool prints the same facts with
other decoration: a reader that learned the files it was shown breaks here, a general one does not.
Files are cut to their first `--max-lines` lines before anything (the baseline is the cut copy read
undecorated), so a run is a few seconds whatever its size. Dev split only.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CACHE, labelled_runs  # noqa: E402

TEXT = {".log", ".txt", ".out", ".err", ""}

# --------------------------------------------------------------- decorations of one line

NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
KV = re.compile(rf"(?<![\w./-])(?P<key>[A-Za-z][A-Za-z0-9_]*(?:[./-][A-Za-z0-9_]+)*)(?P<sep>\s*[:=]\s*)"
                rf"(?P<num>{NUM})(?![\w.:/%])")
"""`key: 1.23` / `key=1.23`: a key (letters first) joined to a number by a colon or an equals sign."""
TIME_KEY = re.compile(r"(?i)^(?:.*[_/.-])?(?:time|dt|elapsed|duration|latency)(?:[_/.-].*)?$")
COUNTER = re.compile(r"(?<![\w.,])(\d{4,})(?=\s*/\s*\d)|(?<=/)(\d{4,})(?![\w.,])")


def _kv(line: str, fn: Callable[[re.Match], str]) -> str:
    return KV.sub(fn, line)


def _prefix(text: str) -> Callable[[str], str]:
    return lambda line: text + line if line.strip() else line


def _ansi_keys(line: str) -> str:
    return _kv(line, lambda m: f"\x1b[36m{m['key']}\x1b[0m{m['sep']}{m['num']}")


def _ansi_values(line: str) -> str:
    return _kv(line, lambda m: f"{m['key']}{m['sep']}\x1b[1;32m{m['num']}\x1b[0m")


def _equals(line: str) -> str:
    return _kv(line, lambda m: f"{m['key']}={m['num']}")


def _space(line: str) -> str:
    return _kv(line, lambda m: f"{m['key']} {m['num']}")


def _pipes(line: str) -> str:
    """`epoch 3, train loss: 1, acc: 2` -> `| epoch 3 | train loss 1 | acc 2 |` (fairseq, nanochat): the
    links dropped, the parts (`, `, `; `, ` - `) parted by bars."""
    out, n = KV.subn(lambda m: f"{m['key']} {m['num']}", line)
    if not n:
        return line
    return "| " + re.sub(r"\s*(?:[,;]\s+|\s-\s|\s*\|\s*)", " | ", out.strip()).strip(" |") + " |"


def _title(line: str) -> str:
    return _kv(line, lambda m: f"{m['key'][:1].upper()}{m['key'][1:]}{m['sep']}{m['num']}")


def _upper(line: str) -> str:
    return _kv(line, lambda m: f"{m['key'].upper()}{m['sep']}{m['num']}")


def _grouped(digits: str) -> str:
    return f"{int(digits):,}" if digits.isdigit() and len(digits) >= 4 and not digits.startswith("0") else digits


def _thousands(line: str) -> str:
    """Counters over 999 grouped by commas: `tokens: 12,345`, `1,200/10,000`."""
    line = _kv(line, lambda m: f"{m['key']}{m['sep']}{_grouped(m['num'])}")
    return COUNTER.sub(lambda m: _grouped(m.group(0)), line)


def _unit(line: str) -> str:
    """A time-like value printed with its unit glued on: `dt: 330.02ms`."""
    return _kv(line, lambda m: f"{m['key']}{m['sep']}{m['num']}{'ms' if TIME_KEY.match(m['key']) else ''}")


def _tqdm(line: str) -> str:
    """A record printed over a progress bar's last redraw (`\\r`-joined, as a captured console shows it)."""
    if not re.search(r"\d", line):
        return line
    return "Training:  42%|████▏     | 420/1000 [01:02<01:26,  6.70it/s]\r" + line


LINE: dict[str, Callable[[str], str]] = {
    "ts_comma": _prefix("2024-05-01 12:00:00,123 "),
    "ts_bracket": _prefix("[12:00:01] "),
    "ts_iso": _prefix("2024-05-01T12:00:00.123Z "),
    "log_root": _prefix("INFO:root:"),
    "log_loguru": _prefix("2024-05-01 12:00:00.123 | INFO     | __main__:train:88 - "),
    "log_rank": _prefix("[rank0]:"),
    "log_titan": _prefix("[titan] "),
    "log_glog": _prefix("I0501 12:00:00.123456  1234 train.py:88] "),
    "ansi_keys": _ansi_keys,
    "ansi_values": _ansi_values,
    "kv_equals": _equals,
    "kv_space": _space,
    "kv_pipes": _pipes,
    "key_title": _title,
    "key_upper": _upper,
    "thousands": _thousands,
    "unit_ms": _unit,
    "tqdm_cr": _tqdm,
}

# ----------------------------------------------------------- decorations of the whole file

TRACEBACK = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1328, in _next_data
    idx, data = self._get_data()
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1294, in _get_data
    success, data = self._try_get_data()
ConnectionResetError: [Errno 104] Connection reset by peer
Retrying the data loader worker 3 (attempt 1 of 5)""".splitlines()
WARNING = "/opt/conda/lib/python3.10/site-packages/torch/optim/lr_scheduler.py:139: UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`."


def _noise(lines: list[str]) -> list[str]:
    """A warning every 7 lines, a blank every 5, a traceback the run survived in the middle."""
    out = []
    mid = len(lines) // 2
    for i, ln in enumerate(lines):
        if i == mid:
            out.extend(TRACEBACK)
        out.append(ln)
        if i % 7 == 3:
            out.append(WARNING)
        if i % 5 == 1:
            out.append("")
    return out


def _rank_dup(lines: list[str]) -> list[str]:
    """Every line that holds a digit printed twice, as two ranks print the same record."""
    return [x for ln in lines for x in ((ln, ln) if re.search(r"\d", ln) else (ln,))]


FILE: dict[str, Callable[[list[str]], list[str]]] = {"noise": _noise, "rank_dup": _rank_dup}
BYTES: dict[str, Callable[[str], str]] = {"crlf": lambda t: t.replace("\n", "\r\n"), "bom": lambda t: "\ufeff" + t}
ALL = ["identity", *LINE, *FILE, *BYTES]


def decorate(text: str, name: str) -> str:
    """The text with one decoration applied (`identity`: unchanged)."""
    if name in BYTES:
        return BYTES[name](text)
    if name == "identity":
        return text
    lines = text.split("\n")
    end = lines.pop() if lines and lines[-1] == "" else None
    if name in FILE:
        lines = FILE[name](lines)
    else:
        fn = LINE[name]
        lines = [fn(ln[:-1]) + "\r" if ln.endswith("\r") else fn(ln) for ln in lines]
    return "\n".join(lines) + ("\n" if end is not None else "")


# ------------------------------------------------------------------------------ reading


def _decode(raw: bytes) -> tuple[str, str]:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16"), "utf-16"
    return raw.decode("utf-8", errors="surrogateescape"), "utf-8"


def _encode(text: str, enc: str) -> bytes:
    return text.encode(enc) if enc == "utf-16" else text.encode("utf-8", errors="surrogateescape")


def write_copy(run: dict, root: Path, name: str, max_lines: int) -> list[Path]:
    """The run's files, cut and decorated, under `root` (same relative layout); the paths to read."""
    files = [CACHE / f for f in run["files"]]
    base = files[0].parent if len(files) == 1 else Path(os.path.commonpath(files))
    for f in files:
        text, enc = _decode(f.read_bytes())
        head = "\n".join(text.split("\n")[:max_lines]) + ("\n" if text.count("\n") >= max_lines else "")
        dest = root / f.relative_to(base)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(_encode(decorate(head, name), enc))
    return [root / files[0].relative_to(base)] if len(files) == 1 else [root]


def norm(name: str) -> str:
    return re.sub(r"[\W_]", "", re.sub(r"_(?:ms|s|sec|pct)$", "", str(name))).lower()


def reading(paths: list[Path]) -> list[dict]:
    """Per run (by name): its step count and its main loss's (step, value) pairs."""
    import spikelens
    from spikelens.frame import roles_of
    from spikelens.stitching import main_metric

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = spikelens.load_runs(*paths)
    for r in sorted(runs, key=lambda r: r.name):
        f = r.frame
        main = main_metric(f, roles_of(f))
        series = {}
        for m in f.get_column("metric").unique().to_list():
            g = f.filter(f["metric"] == m)
            values = [v if v == v else "nan" for v in np.round(g["value"].to_numpy(), 9).tolist()]  # NaN != NaN
            series[str(m)] = set(zip(g["step"].to_list(), values))
        out.append({"name": r.name, "steps": f.get_column("step").n_unique(), "main": main, "series": series})
    return out


def same(base: list[dict], got: list[dict]) -> str:
    """'' when the reading is unchanged, else why not."""
    if not got:
        return "not read"
    if len(base) != len(got):
        return f"{len(got)} runs, was {len(base)}"
    for b, g in zip(base, got):
        if abs(g["steps"] - b["steps"]) > 0.02 * b["steps"]:
            return f"{g['steps']} steps, was {b['steps']}"
        want = b["series"].get(b["main"]) or set()
        named = [m for m in g["series"] if norm(m) == norm(b["main"])]
        cands = [m for m in [g["main"], *named] if m is not None]
        if not any(len(want & g["series"][m]) >= 0.98 * len(want) for m in cands):
            return f"main loss {b['main']!r} ({len(want)} points) not kept (main now {g['main']!r})"
    return ""


def bench(kind: str, suffixes: set[str], transforms: list[str], write: Callable[[dict, Path, str, int], list[Path]],
          read: Callable[[list[Path]], list[dict]] = None, sample: int = 80) -> int:
    """The command line of an invariance benchmark over the dev runs whose files all end in `suffixes`:
    `write(run, root, transform, max_lines)` leaves a decorated copy and returns the paths to read ([]: the
    transform has no use for the run); each transform alone, its reading (`read`, this module's by default)
    compared with the undecorated copy's (`same`). `perturb_tables.py` and `perturb_json.py` run it too."""
    read = read or reading
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=sample, help="runs drawn at random (0: every run)")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--transforms", nargs="*", default=transforms)
    ap.add_argument("--max-lines", type=int, default=3000)
    ap.add_argument("--out")
    ap.add_argument("--show", action="store_true", help="print why each broken run broke")
    a = ap.parse_args()
    runs = [r for r in labelled_runs("dev") if r.get("readable", True) and r["files"]
            and all(Path(f).suffix.lower() in suffixes for f in r["files"]) and all((CACHE / f).exists() for f in r["files"])
            and (not a.only or r["id"] in a.only)]
    if a.sample and not a.only:
        runs = sorted(random.Random(a.seed).sample(sorted(runs, key=lambda r: r["id"]), min(a.sample, len(runs))),
                      key=lambda r: r["id"])
    table = {t: {"before": 0, "after": 0, "broke": {}} for t in a.transforms}
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix=f"spikelens-perturb-{kind}-") as tmp:
        for i, run in enumerate(runs):
            try:
                base = read(write(run, Path(tmp) / run["id"] / "identity", "identity", a.max_lines))
            except Exception as e:  # noqa: BLE001 - a run that fails to read today is no baseline
                base = []
                print(f"{run['id']}: baseline failed: {type(e).__name__}: {e}", file=sys.stderr)
            if not base or not any(b["main"] for b in base):
                continue
            for t in a.transforms:
                paths = write(run, Path(tmp) / run["id"] / t, t, a.max_lines)
                if not paths:
                    continue
                table[t]["before"] += 1
                try:
                    why = same(base, read(paths))
                except Exception as e:  # noqa: BLE001 - a crash is an outcome the benchmark reports
                    why = f"{type(e).__name__}: {str(e)[:120]}"
                if why:
                    table[t]["broke"][run["id"]] = why
                else:
                    table[t]["after"] += 1
            shutil.rmtree(Path(tmp) / run["id"], ignore_errors=True)
            print(f"[{i + 1}/{len(runs)} {time.time() - t0:.0f}s] {run['id']}", file=sys.stderr)
    print(f"{len(runs)} dev {kind} runs (seed {a.seed}, first {a.max_lines} lines), read before / read the same after:")
    for t, row in table.items():
        print(f"  {t:12s} {row['after']:4d}/{row['before']:<4d} broke: {' '.join(sorted(row['broke']))}")
        if a.show:
            for rid, why in sorted(row["broke"].items()):
                print(f"      {rid}: {why}")
    if a.out:
        Path(a.out).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(bench("text", TEXT, [t for t in ALL if t != "identity"], write_copy))
