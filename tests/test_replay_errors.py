"""Every way a replay can be misused ends in one line on stderr and exit code 2
(in-process through `spikelens.cli.main`, the same entry point the console script uses)."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from replay_targets import tiny  # noqa: E402

from spikelens import cli  # noqa: E402

TINY = Path(tiny.__file__)


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        cli.main(["replay", *argv])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def one_line_error(capsys, *argv: str) -> str:
    code, out, err = run_main(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("spikelens: error:"), err
    assert out == ""
    return lines[0]


@pytest.mark.parametrize("argv, expected", [
    ((f"{TINY.parent}/missing.py:build",), "missing.py: no such file"),
    ((f"{TINY}:nope",), "no function 'nope'"),
    ((f"{TINY}:NOT_CALLABLE",), "is a int, not a function"),
    ((f"{TINY}:build_not_a_target",), "expected a ReplayTarget"),
    ((f"{TINY}:build_raises",), "raised ValueError"),
    (("no_such_pkg_xyz.mod:build",), "no such module"),
    ((f"{TINY}:build", "--checkpoint", "/nonexistent/ckpt.pt"), "no such checkpoint"),
    ((f"{TINY}:build", "--metric", "loss"), "--metric needs --logdir"),
    ((f"{TINY}:build", "--window", "9"), "reaches before step 0"),
])
def test_user_mistakes_are_one_line(capsys, argv, expected):
    line = one_line_error(capsys, argv[0], "--step", "3", "--device", "cpu", *argv[1:])
    assert expected in line


def test_broken_target_file_is_one_line(capsys, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\ndef build(step, checkpoint):\n    return (\n")
    assert "SyntaxError" in one_line_error(capsys, f"{bad}:build", "--step", "1", "--device", "cpu")


def test_loss_fn_that_raises_is_one_line(capsys, tmp_path):
    f = tmp_path / "t.py"
    f.write_text(f"import sys; sys.path.insert(0, {str(TINY.parent)!r})\n"
                 "import tiny\nfrom spikelens.replay import ReplayTarget\n"
                 "def build(step, checkpoint):\n"
                 "    model, _ = tiny.make()\n"
                 "    return ReplayTarget(model=model, batch={'x': None}, loss_fn=lambda m, b: m(b['oops']))\n")
    assert "loss_fn raised KeyError" in one_line_error(capsys, f"{f}:build", "--step", "1", "--device", "cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_requested_without_cuda(capsys):
    assert "CUDA is not available" in one_line_error(capsys, f"{TINY}:build", "--step", "1", "--device", "cuda")


def test_module_target_resolves_from_the_working_directory(capsys, monkeypatch):
    monkeypatch.chdir(TINY.parent.parent)
    code, out, err = run_main(capsys, "replay_targets.tiny:build_forward_nan", "--step", "1", "--device", "cpu")
    assert code == 1 and "blocks.1.mlp" in out


def test_rich_report_lists_the_layers(capsys):
    code, out, err = run_main(capsys, f"{TINY}:build", "--step", "2", "--device", "cpu", "--top", "3")
    assert code == 0, err
    assert "finite" in out and "gradients by layer (3 of 8" in out and "update ratio" in out
