"""A library user's sweep killed by SIGTERM leaves no spool behind, and the spool never takes
the host's own SIGTERM handling away (issue 28). Each case is a real process signalled."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import write_csv

ROOT = Path(__file__).resolve().parents[1]


def _run(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPIKELENS_SPOOL_DIR": str(tmp_path / "spool")}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_library_sweep_killed_by_sigterm_removes_its_spool_and_dies_of_the_signal(tmp_path):
    logs = tmp_path / "logs"
    for k in range(3):
        write_csv(logs / f"r{k}" / "metrics.csv", ["step", "train_loss"],
                  [[s, 2.0 - s / 100 + 0.01 * ((s * 7 + k) % 5)] for s in range(60)])
    res = _run(f"""
        import os, signal
        import spikelens
        from spikelens.pipeline import sweep
        sweep.SPOOL_FROM = 2  # the spool from three runs, not 64
        seen = []
        def progress(name):  # called in the parent as each run arrives: the spool exists by then
            seen.append(name)
            if len(seen) == 2:
                print("killing", sorted(os.listdir({str(tmp_path / 'spool')!r})), flush=True)
                os.kill(os.getpid(), signal.SIGTERM)
        spikelens.analyze({str(logs)!r}, jobs=1, keep_frames=False, spool=True, progress=progress)
        print("not reached")
    """, tmp_path)
    assert res.returncode == -signal.SIGTERM, res.stderr[-2000:]
    assert "killing ['spikelens-spool-" in res.stdout and "not reached" not in res.stdout
    assert os.listdir(tmp_path / "spool") == []


def test_the_host_s_handler_is_kept_and_default_comes_back_after_the_spool(tmp_path):
    res = _run(f"""
        import os, signal, sys
        from spikelens.pipeline.spool import Spool
        s = Spool({str(tmp_path / 'spool')!r})
        ours = signal.getsignal(signal.SIGTERM)
        s.close()
        print("released", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, ours is not signal.SIG_DFL)
        def host(signum, frame):
            print("host handler ran", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, host)
        s = Spool({str(tmp_path / 'spool')!r})
        s.append({{"a": 1}})
        print("kept", signal.getsignal(signal.SIGTERM) is host, flush=True)
        os.kill(os.getpid(), signal.SIGTERM)
    """, tmp_path)
    assert res.returncode == 7, res.stderr[-2000:]
    assert "released True True" in res.stdout and "kept True" in res.stdout and "host handler ran" in res.stdout
    assert os.listdir(tmp_path / "spool") == []  # the host's exit ran the spool's exit hook
