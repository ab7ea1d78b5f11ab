"""A sweep's reports on disk, in arrival order: the parent of a sweep of 10^5 runs holds
one run's report at a time, not all of them (issue 28).

Each entry is pickled into one file of a private temporary folder (`mkdtemp`, mode 0700;
in the system's temporary folder or one the caller names) that this process created and
alone reads, and is removed with the spool (closed, the spool collected, or the process
ending, SIGTERM included: see `_on_sigterm`): never a file another process wrote, so pickle
(exact, frames included, fast) is safe here where a shared findings dataset uses
validated JSON (`statejson`). Entries are read with `pread`, so two passes over the
spool may interleave; `replace` appends the new version and points the entry at it.
"""
from __future__ import annotations

import os
import pickle
import shutil
import signal
import tempfile
import threading
import weakref
from array import array
from typing import Any

PREFIX = "spikelens-spool-"


class Spool:
    """Objects appended and read back by index; a few bytes of memory each (offset, length)."""

    def __init__(self, where: str | os.PathLike | None = None) -> None:
        """A private folder inside `where` (made if missing; None: the system's temporary folder)."""
        if where is not None:
            os.makedirs(where, exist_ok=True)
        self.folder = tempfile.mkdtemp(prefix=PREFIX, dir=where)
        path = os.path.join(self.folder, "entries.bin")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self._end = 0
        self._offsets = array("q")
        self._lengths = array("q")
        self._closer = weakref.finalize(self, _remove, self._fd, self.folder)
        _LIVE.add(self._closer)
        _watch_sigterm()

    def append(self, obj: Any) -> int:
        """Write `obj`; its index."""
        self._offsets.append(0)
        self._lengths.append(0)
        self.replace(len(self._offsets) - 1, obj)
        return len(self._offsets) - 1

    def replace(self, i: int, obj: Any) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:  # os.write may write less than asked (a full disk raises OSError)
            view = view[os.pwrite(self._fd, view, self._end + len(data) - len(view)):]
        self._offsets[i], self._lengths[i] = self._end, len(data)
        self._end += len(data)

    def __getitem__(self, i: int) -> Any:
        n = self._lengths[i]
        data = os.pread(self._fd, n, self._offsets[i])
        if len(data) != n:  # pragma: no cover - the file is this process's own
            raise OSError(f"{self.folder}: spool entry {i} cut short")
        return pickle.loads(data)

    def __len__(self) -> int:
        return len(self._offsets)

    def close(self) -> None:
        """Remove the folder now (also done when the spool is collected or the process ends)."""
        self._closer()


def _remove(fd: int, folder: str) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)
    _release_sigterm()


_LIVE: set[weakref.finalize] = set()
"""The removers of the spools this process holds (a spent one is dropped when next looked at)."""


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM in a process that left it to the default (a library user's script, a job
    killed by its scheduler): the spools are removed, then the process ends of the signal as
    it would have (the same status). weakref's exit hook runs on a normal exit only."""
    for closer in list(_LIVE):
        closer()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _watch_sigterm() -> None:
    """Handle SIGTERM while a spool lives, only where nobody else does: the host's own
    handler (the CLI's, an application's) and an ignored SIGTERM are left as they are (a
    handler that raises or exits reaches the exit hook), and so is every thread but the
    main one, which cannot set handlers."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # pragma: no cover - an embedded interpreter without signals
        pass


def _release_sigterm() -> None:
    """The default again once the last spool is gone, if the handler is still ours."""
    for closer in list(_LIVE):
        if not closer.alive:
            _LIVE.discard(closer)
    if _LIVE or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # pragma: no cover
        pass
