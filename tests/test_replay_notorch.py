"""Without torch, spikelens still imports and works, and `spikelens replay` says how to
get torch in one line (exit 2). Torch is hidden in a subprocess by `sys.modules["torch"] = None`
(what Python does for a module that must not import: `import torch` raises ImportError, and
`importlib.util.find_spec("torch")`, which polars probes, answers None)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

HIDE_TORCH = """
import sys
sys.modules["torch"] = None
"""


def _run(body: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", HIDE_TORCH + body], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_replay_without_torch_is_one_line_with_the_install_hint(tmp_path):
    target = tmp_path / "t.py"
    target.write_text("def build(step, checkpoint):\n    raise AssertionError('never called')\n")
    res = _run(f"from spikelens.cli import main\nmain(['replay', {str(target) + ':build'!r}, '--step', '3'])\n")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'spikelens[replay]'" in lines[0], res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_spikelens_imports_without_torch():
    res = _run("import spikelens, spikelens.replay, spikelens.cli.commands\n"
               "from spikelens.replay import ReplayTarget, hf_callback\n"
               "cb = hf_callback('unused')\n"
               "assert sys.modules['torch'] is None\n"
               "print('ok', ReplayTarget.__name__)\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok ReplayTarget"
