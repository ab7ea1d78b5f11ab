"""Logs of a training script run several times into one file (`python train.py >> train.log`), as the
tests of appended runs (`sessions.py`) write them."""
from __future__ import annotations

import numpy as np


def clean_loss(n, rng):
    """A loss that falls and settles, with a little noise."""
    return 2.0 * np.exp(-np.arange(n) / 60) + 0.5 + 0.01 * rng.standard_normal(n)


def script_log(path, runs):
    """Each run's losses after the argparse line the script prints first, appended in order."""
    lines = []
    for loss in runs:
        lines.append("Namespace(lr=0.001, batch_size=32)\n")
        lines += [f"step {i + 1} | loss {v:.5f}\n" for i, v in enumerate(loss)]
    path.write_text("".join(lines))
    return path


def launches_log(path, launches):
    """Each launch: (banner lines, its losses), appended in order."""
    lines = []
    for banner, loss in launches:
        lines.append(banner)
        lines += [f"step {i + 1} | loss {v:.5f} | lr 0.001\n" for i, v in enumerate(loss)]
    path.write_text("".join(lines))
    return path


def relaunch_deaths(path):
    """The SL306 relaunch-crash findings of a log's one run, from its stitched launches."""
    from spikelens import api, diagnostics, stitching
    from spikelens.detect.ended import relaunch_crash_findings

    with diagnostics.collecting():
        (run,) = api.load_runs(path)
    st = stitching.stitch_run(run)
    return relaunch_crash_findings(run.name, run.meta or {}, st.boundaries)
