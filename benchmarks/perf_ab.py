"""Two spikelens trees on the same event file, process by process in turn (#28's analyze targets).

    python benchmarks/perf_ab.py --before 0260cf8 --after HEAD --input FILE [--runs 5]

Each tree is a commit (its `spikelens/` is `git archive`d into a temp folder) or a folder that
holds a `spikelens/` package. Both get their byte-code compiled first (no process pays for
compiling, as no installed copy does). Then `spikelens analyze FILE --format json` runs `--runs`
times a tree, alternating before/after, with `bench_analyze.py`'s process script (the program
from its first import; RSS sampled after the CLI's imports): CPU seconds (user + system, the
whole process) and the analysis memory (peak RSS over the post-import RSS), as medians with
ranges and the load average before and after. The JSON reports of the two trees are compared
(the `"version"` line aside): a tree that changes the report is said so.
"""
from __future__ import annotations

import argparse
import compileall
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402
from bench_analyze import CLI, _growth  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def _tree(spec: str, into: Path) -> Path:
    """A folder holding the tree's `spikelens/` package, byte-code compiled."""
    if (Path(spec) / "spikelens").is_dir():
        root = Path(spec)
    else:
        root = into / spec.replace("/", "_")
        root.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", spec, "spikelens"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    compileall.compile_dir(str(root / "spikelens"), quiet=1)
    return root


def _report(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if '"version"' not in line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="commit or folder with spikelens/")
    ap.add_argument("--after", required=True, help="commit or folder with spikelens/")
    ap.add_argument("--input", required=True, type=Path, help="an event file (bench_analyze.py writes one)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="spikelens-ab-") as tmp:
        trees = {"before": _tree(args.before, Path(tmp)), "after": _tree(args.after, Path(tmp))}
        load_before = _bench.load_avg()
        samples: dict[str, list] = {"before": [], "after": []}
        for _ in range(args.runs):
            for name, root in trees.items():
                s = _bench.run_process([sys.executable, "-c", CLI, str(args.input.resolve())], cwd=Path(tmp),
                                       env={"PYTHONPATH": str(root)})
                if s.rc not in (0, 1):
                    raise RuntimeError(f"{name} exited {s.rc}: {s.stderr.strip()[-800:]}")
                samples[name].append(s)
        load_after = _bench.load_avg()
    print(f"{args.input.name}: {args.runs} runs a tree, alternated; load avg before {load_before}, after {load_after}")
    for name, spec in (("before", args.before), ("after", args.after)):
        cpu = [s.cpu_s for s in samples[name]]
        growth = [_growth(s) / 1e6 for s in samples[name]]
        points = json.loads(samples[name][0].stdout)["runs"][0]["points"]
        rss = [s.maxrss_bytes / 1e6 for s in samples[name]]
        print(f"{name:6s} {spec}: cpu {statistics.median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f}); "
              f"growth {statistics.median(growth):.1f} MB ({min(growth):.1f}-{max(growth):.1f}) = "
              f"{statistics.median(growth) * 1e6 / points:.0f} bytes a point; "
              f"peak RSS {statistics.median(rss):.0f} MB; cpu of each run: {', '.join(f'{c:.2f}' for c in cpu)}")
    same = _report(samples["before"][0].stdout) == _report(samples["after"][0].stdout)
    print(f"JSON reports (version line aside): {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
