"""The program's start and end (#28, leaner runs): a command line imports only the module of
the command it runs, and the program ends without the interpreter's teardown only after
its exit handlers ran and its streams were flushed."""
from __future__ import annotations

import os
import subprocess
import sys

from spikelens import cli


def _program(body: str) -> subprocess.CompletedProcess:
    """`body` run as the `spikelens` program would be (argv[0] is `spikelens`)."""
    return subprocess.run([sys.executable, "-c", "import sys\nsys.argv[0] = 'spikelens'\n" + body],
                          capture_output=True, text=True, timeout=120)


def test_the_command_a_line_names():
    assert cli._command_of(["analyze", "runs/"]) == "analyze"
    assert cli._command_of(["--no-verify", "ls", "x"]) == "ls"
    assert cli._command_of(["explain", "spike"]) == "explain"
    for line in ([], ["--help"], ["--version"], ["nosuch"], ["--install-completion"]):
        assert cli._command_of(line) is None, line  # every command registered: help lists them all


def test_a_command_imports_only_its_module_and_every_name_is_registered():
    res = _program("from spikelens.cli import main\n"
                   "import atexit\n"
                   "atexit.register(lambda: print('modules', sorted(m for m in sys.modules if m.startswith('spikelens.cli.'))))\n"
                   "sys.argv[1:] = ['explain', 'spike']\n"
                   "main()\n")
    assert res.returncode == 0, res.stderr
    assert "Loss spike" in res.stdout
    loaded = next(ln for ln in res.stdout.splitlines() if ln.startswith("modules"))
    assert "spikelens.cli.analyze" in loaded  # explain lives beside analyze
    assert "spikelens.cli.replay" not in loaded and "spikelens.cli.watch" not in loaded
    assert set(cli.COMMAND_MODULES) >= {"analyze", "explain", "check", "export", "ls", "replay", "stitch",
                                        "version", "watch"}


def test_fast_exit_runs_exit_handlers_flushes_and_keeps_the_code():
    """A handler registered before main (a spool's cleanup) runs; buffered output written by
    it arrives after the command's own; the exit code is the command's."""
    ok = _program("import atexit\n"
                  "atexit.register(lambda: sys.stdout.write('handler ran\\n'))\n"
                  "sys.argv[1:] = ['--version']\n"
                  "from spikelens.cli import main\nmain()\n")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("spikelens ") and ok.stdout.rstrip().endswith("handler ran")
    bad = _program("sys.argv[1:] = ['analyze', '--format', 'nosuch', 'x']\n"
                   "from spikelens.cli import main\nmain()\n")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_host_calling_main_keeps_its_process(capsys):
    """main(argv) from a host (tests, embedding) raises SystemExit as before: no os._exit."""
    try:
        cli.main(["version"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    assert "spikelens" in capsys.readouterr().out


def test_a_json_analyze_into_a_pipe_draws_nothing_and_imports_no_rich_console(tmp_path):
    """Progress is for a terminal: with stderr a pipe (and no setting forcing a terminal) a
    clean JSON analyze never loads Rich's console; with FORCE_COLOR Rich decides again."""
    log = tmp_path / "train.log"
    log.write_text("".join(f"step {i} loss {2.0 - i / 100:.4f}\n" for i in range(60)))
    body = ("import atexit\n"
            "atexit.register(lambda: print('rich', 'rich.console' in sys.modules, file=sys.stderr))\n"
            f"sys.argv[1:] = ['analyze', {str(log)!r}, '--format', 'json']\n"
            "from spikelens.cli import main\nmain()\n")
    res = _program(body)
    assert res.returncode == 0, res.stderr
    assert res.stdout.lstrip().startswith("{") and "rich False" in res.stderr
    forced = subprocess.run([sys.executable, "-c", "import sys\nsys.argv[0] = 'spikelens'\n" + body],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "FORCE_COLOR": "1"})
    assert forced.returncode == 0 and "rich True" in forced.stderr
