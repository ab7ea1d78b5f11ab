"""The HTML report of a sweep: render time, file size and first paint in Chromium.

    python benchmarks/bench_html.py                  # 200 runs x 50k steps (the issue's budget)
    python benchmarks/bench_html.py --runs 20        # a quick look
    python benchmarks/bench_html.py --keep out.html  # keep the page to open it

Each run logs loss, grad norm and LR at every step and the loss scale every 10 steps
(155k points a run, 31M for 200 runs). Seven runs in ten carry findings placed where
their curves have them: a one-step spike or a spike with a slow recovery, a divergence
into NaN, or a resume whose rolled-back points are superseded; the rest are clean.
The reports are built directly (the renderer only reads the report model and the
frames), so the figure is the renderer's own time: `render_html` to a string, then
the write. The first paint is Chromium's first-contentful-paint of the saved file,
and "charts drawn" is how long the first run's charts take to appear once it is
scrolled into view (they are built lazily; headless, same machine).

Budgets (issue 15): render <= 10 s, file <= 10 MB, first paint <= 2 s.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the Selenium/Chromium helper the browser tests use

from spikelens.frame import SCHEMA  # noqa: E402
from spikelens.model.finding import Cause, Finding  # noqa: E402
from spikelens.model.report import Report, RunReport  # noqa: E402


def _frame(name: str, metrics: dict[str, tuple[np.ndarray, np.ndarray]], superseded: np.ndarray | None,
           segment: np.ndarray | None) -> pl.DataFrame:
    parts = []
    for m, (step, value) in metrics.items():
        n = step.size
        sup = superseded if (superseded is not None and superseded.size == n) else np.zeros(n, bool)
        seg = segment if (segment is not None and segment.size == n) else np.zeros(n, np.uint32)
        parts.append(pl.DataFrame({"run": name, "source": f"{name}.csv", "segment": seg,
                                   "seq": np.zeros(n, np.uint64), "step": step, "wall_time": None,
                                   "metric": m, "value": value, "superseded": sup}))
    f = pl.concat(parts, how="vertical_relaxed").with_columns(seq=pl.int_range(pl.len(), dtype=pl.UInt64))
    return f.select([pl.col(c).cast(t) for c, t in {**SCHEMA, "superseded": pl.Boolean}.items()])


def make_run(i: int, steps: int, rng: np.random.Generator) -> RunReport:
    name = f"sweep/lr{i % 7}-seed{i:03d}"
    s = np.arange(steps, dtype=np.int64)
    loss = (2.0 + 6.0 * np.exp(-s / (0.05 * steps))) * np.exp(0.02 * rng.standard_normal(steps))
    grad = 0.5 + np.exp(-s / (0.05 * steps)) + 0.05 * np.abs(rng.standard_normal(steps))
    lr = 3e-4 * np.minimum(1, (s + 1) / 500) * 0.5 * (1 + np.cos(np.pi * s / steps))
    findings: list[Finding] = []
    superseded = segment = None
    segments = [{"segment": 0, "first_step": 0, "last_step": steps - 1}]
    kind = i % 10
    if kind in (0, 1, 2):  # a one-step spike (the hairline a stride or a mean would erase)
        at = int(rng.integers(steps // 5, steps - 100))
        loss[at] *= 4.0
        grad[at - 5:at + 1] *= 6.0
        findings.append(Finding(kind="spike", code="SL101", run=name, metric="loss", severity="warning",
                                message=f"loss spiked 4.00x at step {at} and was back at the next point",
                                start_step=at, peak_step=at, end_step=at + 1, recovery="fast", magnitude=4.0,
                                evidence={"peak_value": float(loss[at]), "baseline": float(loss[at - 1]),
                                          "recovery_steps": 1, "one_point": True},
                                causes=[Cause("grad_explosion", 0.8, "grad_norm rose 6x over the 5 steps before")]))
    if kind in (3, 4):  # a spike with a slow recovery
        at = int(rng.integers(steps // 5, steps - 3000))
        bump = np.where(s >= at, 1.5 * np.exp(-(s - at) / 600.0), 0.0)
        loss *= 1 + bump
        findings.append(Finding(kind="spike", code="SL101", run=name, metric="loss", severity="warning",
                                message=f"loss spiked 2.50x at step {at} and recovered in 2400 steps",
                                start_step=at, peak_step=at, end_step=at + 2400, recovery="slow", magnitude=2.5,
                                evidence={"recovery_steps": 2400}))
    if kind == 5:  # divergence into NaN
        at = int(steps * 0.8)
        loss[at:] *= np.exp((s[at:] - at) / 300.0)
        loss[at + 2000:] = np.nan
        grad[at + 2000:] = np.inf
        findings.append(Finding(kind="divergence", code="SL201", run=name, metric="loss", severity="error",
                                message=f"loss turned at step {at} and rose before going NaN", start_step=at))
        findings.append(Finding(kind="nan", code="SL210", run=name, metric="loss", severity="error",
                                message=f"loss became NaN at step {at + 2000}", start_step=at + 2000))
    metrics = {"loss": (s, loss), "grad_norm": (s, grad), "lr": (s, lr)}
    if kind == 6:  # resumed from step r after logging up to r + 1000: those points are superseded
        r = steps // 2
        idx = np.concatenate([np.arange(0, r + 1000), np.arange(r, steps)])
        superseded = np.concatenate([np.arange(r + 1000) >= r, np.zeros(steps - r, bool)])
        segment = np.concatenate([np.zeros(r + 1000, np.uint32), np.ones(steps - r, np.uint32)])
        metrics = {m: (v[0][idx], v[1][idx]) for m, v in metrics.items()}
        segments = [{"segment": 0, "first_step": 0, "last_step": r + 999},
                    {"segment": 1, "first_step": r, "last_step": steps - 1}]
        findings.append(Finding(kind="resume_overlap", code="SL301", run=name, metric=None, severity="warning",
                                message=f"launch 2 resumed at step {r} after launch 1 logged up to {r + 999}",
                                extra={"resume_step": r, "rolled_back_from": r + 999}))
    scale_steps = np.arange(0, steps, 10, dtype=np.int64)
    metrics["loss_scale"] = (scale_steps, np.full(scale_steps.size, 65536.0))
    frame = _frame(name, metrics, superseded, segment)
    return RunReport(run=name, sources=[f"{name}.csv"], formats=["csv"], segments=segments,
                     metrics={"loss": "loss", "grad_norm": "grad_norm", "lr": "lr", "loss_scale": "loss_scale"},
                     findings=findings, points=frame.height, frame=frame,
                     stats={"main_metric": "loss", "first_step": 0, "last_step": steps - 1,
                            "first_value": float(loss[0]), "last_value": float(loss[-1])})


def first_paint(path: Path) -> dict[str, float] | None:
    """Chromium's first-contentful-paint and load of the page, and when the first run's
    charts are drawn (ms), or None without a browser."""
    import browser

    if browser.missing():
        print(f"first paint: skipped ({browser.missing()})")
        return None
    with browser.chromium() as d:
        d.get(path.as_uri())
        out = d.execute_script("""
            const p = performance.getEntriesByType('paint').find(e => e.name === 'first-contentful-paint');
            const n = performance.getEntriesByType('navigation')[0];
            return {fcp: p ? p.startTime : null, dom: n.domContentLoadedEventEnd, load: n.loadEventEnd};""")
        t0 = d.execute_script("document.querySelector('section.run').scrollIntoView(); return performance.now()")
        end = time.monotonic() + 60
        while not d.execute_script("return document.querySelector('.charts .uplot') !== null") \
                and time.monotonic() < end:
            time.sleep(0.02)
        out["charts"] = d.execute_script("return performance.now()") - t0
        errors = browser.console_errors(d)
        if errors:
            print("console errors:", errors[:3])
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--keep", type=Path, help="also save the page here")
    args = ap.parse_args()
    from spikelens.report.html import render_html

    rng = np.random.default_rng(0)
    t = time.perf_counter()
    report = Report("analyze", [make_run(i, args.steps, rng) for i in range(args.runs)])
    points = sum(r.points for r in report.runs)
    print(f"built {args.runs} runs x {args.steps:,} steps ({points / 1e6:.1f}M points) "
          f"in {time.perf_counter() - t:.1f} s; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "report.html"
        t = time.perf_counter()
        page = render_html(report)
        path.write_text(page, encoding="utf-8")
        took = time.perf_counter() - t
        size = path.stat().st_size
        print(f"render + write: {took:.2f} s (budget 10 s); file {size / 1e6:.2f} MB (budget 10 MB)")
        paint = first_paint(path)
        if paint:
            print(f"Chromium: first contentful paint {paint['fcp']:.0f} ms (budget 2000 ms), "
                  f"DOM ready {paint['dom']:.0f} ms, load {paint['load']:.0f} ms, "
                  f"a run's charts drawn {paint['charts']:.0f} ms after scrolling to it")


if __name__ == "__main__":
    main()
