"""Ctrl-C and SIGTERM before the command line is loaded.

Importing the CLI (Polars, Typer, Rich) takes a good part of a second. A Ctrl-C in
that time used to print a `KeyboardInterrupt` traceback from deep inside an import.
The program entries (`python -m spikelens`, the `spikelens` script) install these
handlers first, before any heavy import: a signal then ends the process at once with
one line and 130 (SIGINT) or 143 (SIGTERM), as a shell reports them. Nothing has been
read or written yet, so nothing needs cleaning up. `cli.main` replaces them with its
own handling (workers stopped, outputs whole or absent) once the app is loaded.

This module imports only the standard library's `os`, `signal` and `sys`.
"""
from __future__ import annotations

import os
import signal
import sys

_WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


def _stop_now(signum, frame) -> None:
    try:
        os.write(2, f"spikelens: {_WORDS.get(signum, 'stopped')}\n".encode())
    except OSError:
        pass
    os._exit(128 + signum)


def install() -> None:
    """Stop at once on SIGINT/SIGTERM (a signal the parent set to be ignored stays ignored:
    `nohup`, a background job)."""
    try:
        for sig in _WORDS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, _stop_now)
    except ValueError:  # not the main thread: the host owns the signals
        pass


def installed(sig: int) -> bool:
    """Is the early handler the one in place for `sig`?"""
    return signal.getsignal(sig) is _stop_now


def is_program() -> bool:
    """Is this process the `spikelens` console script (not a host importing the CLI)?"""
    name = os.path.basename(sys.argv[0] if sys.argv else "")
    return name.split(".")[0] == "spikelens" and not name.endswith(".py")
