"""The `spikelens` command: a thin Typer app over `spikelens.api`.

Each command lives in its own module and registers itself on `app`. Typed errors
become one-line messages on stderr with exit code 2; nothing a user did wrong ends
in a traceback.
"""
from __future__ import annotations

import sys

from .. import interrupts

if interrupts.is_program():  # the `spikelens` script: take Ctrl-C before the heavy imports
    interrupts.install()
    from ..allocator import return_freed_pages

    return_freed_pages()  # before Polars loads (allocator)

import typer  # noqa: E402

from ..errors import SpikelensError  # noqa: E402
from .helptext import Command, Group


class _Typer(typer.Typer):
    """Commands default to the help-preserving class (see helptext)."""

    def command(self, *args, **kwargs):
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


app = _Typer(
    name="spikelens",
    cls=Group,
    help="Post-mortem analysis of training logs: spikes, divergence, NaN, oscillation, resume artifacts.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"spikelens {__version__}")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version,
        help="Print the version and exit (`spikelens version` adds the readers' libraries, as JSON).",
    ),
    no_verify: bool = typer.Option(
        False, "--no-verify",
        help="Skip the CRC checks of TensorBoard event files (faster; damage is then found only by parsing).",
    ),
) -> None:
    """Options for every command: `spikelens --no-verify analyze runs/`."""
    if no_verify:
        import os

        os.environ["SPIKELENS_NO_VERIFY"] = "1"  # an environment variable reaches sweep workers too


COMMAND_MODULES = {"analyze": "analyze", "explain": "analyze", "check": "check", "export": "export", "ls": "ls",
                   "replay": "replay", "stitch": "stitch", "version": "version", "watch": "watch"}
"""The module that registers each command: a command line that names one imports only it
(`analyze` need not load replay, watch or check); anything else (help, completion, an
unknown word) imports them all, so every command is listed."""


def _register(args: list[str] | None = None) -> None:
    """Register the commands on `app`: every one, or only the one `args` (a command line)
    runs, when it names one (each command's module costs its imports at start-up)."""
    import importlib
    import os

    wanted = _command_of(args) if args is not None and not any(
        k.startswith("_") and k.endswith("_COMPLETE") for k in os.environ) else None  # shell completion: all
    if wanted is None:
        from . import commands  # noqa: F401  (each module adds its command to `app`)
    else:
        importlib.import_module(f"{__name__}.{COMMAND_MODULES[wanted]}")


def _command_of(args: list[str]) -> str | None:
    """The command a command line runs: its first word after the global options, when
    that is a command name and no help or completion option comes before it."""
    for arg in args:
        if arg in ("--no-verify",):
            continue
        return arg if arg in COMMAND_MODULES else None
    return None


class Terminated(BaseException):
    """SIGTERM, raised where the main process is (not an Exception: nothing that keeps a
    sweep going past a crashing detector may swallow it)."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _signal_behind(exc: BaseException) -> int | None:
    """The exit code (130, 143) of a Ctrl-C or SIGTERM behind `exc`, if one is. Click's
    `Abort` wraps a KeyboardInterrupt; Python 3.11 wraps a signal that lands while a
    dataclass is being built at import in a RuntimeError."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return 130
        if isinstance(exc, Terminated):
            return 143
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _stopped(code: int, fast: bool) -> None:
    """Interrupted (Ctrl-C, 130) or terminated (SIGTERM, 143): one line, no traceback.
    Workers are already stopped and every output is written whole or not at all.

    The program leaves by `_finish`'s fast exit: with the ordinary exit, about one Ctrl-C
    in ten half a second in ended the process by SIGINT itself (-2) after this line,
    not 130. CPython does that when it has marked a KeyboardInterrupt as unhandled, most
    likely one raised inside source a library runs through the C API, a mark that stays
    even though the interrupt is handled here; `os._exit` never reaches that check."""
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):  # a second signal during the exit changes nothing
        signal.signal(sig, signal.SIG_IGN)
    typer.echo(f"spikelens: {'interrupted' if code == 130 else 'terminated'}", err=True)
    _finish(code, fast)


def main(argv: list[str] | None = None, *, exit_fast: bool | None = None) -> None:
    """Entry point: run the app, turn spikelens errors into one line and exit 2; Ctrl-C
    exits 130 and SIGTERM 143, as a shell reports a process ended by them.

    `exit_fast` (default: when this process is the `spikelens` program, not a host calling
    `main(argv)`): once the command has finished and its outputs are written, the process
    ends without the interpreter's teardown (see `_finish`)."""
    import signal

    if exit_fast is None:
        exit_fast = argv is None and interrupts.is_program()
    _register(sys.argv[1:] if argv is None else list(argv))
    try:
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        if interrupts.installed(signal.SIGINT):  # the program's early stop: Ctrl-C is a KeyboardInterrupt again
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (embedded): leave the host's handling alone
        before = {}
    try:
        _main(argv, exit_fast)
    finally:
        for sig, handler in before.items():  # called in-process (tests, embedding): give them back
            signal.signal(sig, handler)


def _finish(code: int, fast: bool) -> None:
    """Exit with `code`. The program skips the interpreter's teardown (freeing every module
    and object one by one: ~0.2 s of CPU after a large analysis) with `os._exit`, but only
    when nothing can be lost by it: every output is already written whole (outputs are
    written to a temporary file, synced and renamed), the exit handlers run first (spools'
    cleanup, logging), the standard streams are flushed, and no other Python thread is
    alive. Otherwise, and for a host calling `main(argv)`, a normal `sys.exit`."""
    threading = sys.modules.get("threading")
    if fast and (threading is None or threading.active_count() == 1):
        import atexit
        import os

        try:
            sys.stdout.flush()
            sys.stderr.flush()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(code)  # a stream that cannot be flushed: the ordinary exit reports it
        os._exit(code)
    sys.exit(code)


def _main(argv: list[str] | None, fast: bool = False) -> None:
    try:
        # without standalone mode, `raise typer.Exit(code)` comes back as the return value
        code = app(args=argv, prog_name="spikelens", standalone_mode=False)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not at exit
    except BrokenPipeError:
        # `spikelens analyze runs/ | head`: the reader left; stop quietly, as a tool killed
        # by SIGPIPE would (128 + 13), and keep Python from complaining at exit
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    except SpikelensError as exc:
        typer.echo(f"spikelens: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        _stopped(130, fast)
    except Terminated:
        _stopped(143, fast)
    except typer.Exit as exc:
        _finish(exc.exit_code, fast)
    except Exception as exc:  # click usage errors and aborts
        import click

        if isinstance(exc, (click.exceptions.Abort, typer.Abort)):  # click's word for a KeyboardInterrupt
            _stopped(130, fast)
        if _signal_behind(exc):
            _stopped(_signal_behind(exc), fast)
        # typer >= 0.20 vendors click (typer._click): its usage errors are not click's
        if isinstance(exc, (click.ClickException, typer.exceptions.TyperException)) and hasattr(exc, "show"):
            exc.show()
            sys.exit(2)
        raise
    if code == 130:  # typer's answer to a KeyboardInterrupt
        _stopped(130, fast)
    _finish(code if isinstance(code, int) else 0, fast)
