"""A W&B run folder a repository kept flattened: `run-<id>.wandb`, `output.log`, `config.yaml` side by side
(no `files/`). The console log beside the `.wandb` file is the run's console as `files/output.log` is: the
error it ends in tells how the run ended (issue #24, session 25). Fixtures: the real `wandb` client's
offline runs (`fixtures/writers/wandb_endings.py`), copied flat into a temporary folder."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from spikelens import api, diagnostics

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
from writers import wandb_endings as WE  # noqa: E402


def _flattened(key: str, dst: Path) -> Path:
    """The fixture run `key` with every file of `files/` moved beside its `.wandb` file."""
    (folder,) = (FIXTURES / "wandb_endings" / key).iterdir()
    dst.mkdir()
    for f in folder.rglob("*"):
        if f.is_file():
            shutil.copy(f, dst / f.name)
    assert (dst / "output.log").is_file() and not (dst / "files").exists()
    return dst


def _ended(path: Path) -> list:
    with diagnostics.collecting():
        (run,) = api.analyze(path).runs
    return [f for f in run.findings if f.kind == "ended_early" and not f.evidence.get("launch_crashed")]


def test_a_flattened_wandb_run_that_crashed_names_the_error_its_console_log_ends_in(tmp_path, no_workers):
    (f,) = _ended(_flattened("crashed", tmp_path / "run"))
    assert f.severity == "error" and f.evidence["error_line"] == WE.ERROR_LINE
    assert f.start_step == WE.N_STEPS - 1


def test_a_flattened_wandb_run_that_exited_cleanly_is_no_crash_whatever_it_printed(tmp_path, no_workers):
    path = _flattened("clean", tmp_path / "run")
    assert "Traceback" in (path / "output.log").read_text()
    assert not _ended(path)
