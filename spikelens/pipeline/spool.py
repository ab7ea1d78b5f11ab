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
import struct
import tempfile
import threading
import weakref
from array import array
from typing import Any, Iterator

PREFIX = "spikelens-spool-"


class Spool:
    """Objects appended and read back by index; where each lies (offset, length) is itself on
    disk (`index`), so the spool holds no memory per entry."""

    def __init__(self, where: str | os.PathLike | None = None) -> None:
        """A private folder inside `where` (made if missing; None: the system's temporary folder)."""
        if where is not None:
            os.makedirs(where, exist_ok=True)
        self.folder = tempfile.mkdtemp(prefix=PREFIX, dir=where)
        path = os.path.join(self.folder, "entries.bin")
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        self._end = 0
        self._closer = weakref.finalize(self, _remove, self._fd, self.folder)
        _LIVE.add(self._closer)
        _watch_sigterm()
        self.index = DiskArray(self.folder, width=2)
        """Each entry's (offset, length) in `entries.bin`."""

    def append(self, obj: Any) -> int:
        """Write `obj`; its index."""
        self.index.append((0, 0))
        self.replace(len(self.index) - 1, obj)
        return len(self.index) - 1

    def replace(self, i: int, obj: Any) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(self._fd, data, self._end)
        self.index[i] = (self._end, len(data))
        self._end += len(data)

    def __getitem__(self, i: int) -> Any:
        offset, n = self.index[i]
        data = os.pread(self._fd, n, offset)
        if len(data) != n:  # pragma: no cover - the file is this process's own
            raise OSError(f"{self.folder}: spool entry {i} cut short")
        return pickle.loads(data)

    def __len__(self) -> int:
        return len(self.index)

    def array(self, width: int = 1) -> "DiskArray":
        """A new array of whole numbers kept in this spool's folder."""
        return DiskArray(self.folder, width)

    def strings(self) -> "DiskStrings":
        """A new list of strings kept in this spool's folder."""
        return DiskStrings(self.folder)

    def close(self) -> None:
        """Remove the folder now (also done when the spool is collected or the process ends)."""
        self._closer()


def _write_all(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:  # os.pwrite may write less than asked (a full disk raises OSError)
        view = view[os.pwrite(fd, view, at + len(data) - len(view)):]


BUFFERED = 512
"""Rows a `DiskArray` keeps in memory before writing them out (appends come in runs)."""


class DiskArray:
    """Rows of `width` 64-bit whole numbers in a file of the spool's folder, read and written in
    place (`pread`/`pwrite`): what a sweep's parent would otherwise hold a few numbers of per run
    (issue 28). The last rows appended wait in a small buffer; a row is one int (width 1) or a tuple."""

    def __init__(self, folder: str, width: int = 1) -> None:
        fd, path = tempfile.mkstemp(dir=folder, suffix=".q")
        os.unlink(path)  # the folder's removal or the process's end frees it
        self._fd, self.width, self._row = fd, width, 8 * width
        self._fmt = f"<{width}q"
        self._flushed = 0  # rows on disk
        self._buffer = array("q")
        weakref.finalize(self, _close, fd)

    def __len__(self) -> int:
        return self._flushed + len(self._buffer) // self.width

    def append(self, row: Any) -> None:
        if self.width == 1:
            self._buffer.append(row)
        else:
            self._buffer.extend(row)
        if len(self._buffer) >= BUFFERED * self.width:
            self._flush()

    def extend(self, rows: Any) -> None:
        for row in rows:
            self.append(row)

    def _flush(self) -> None:
        if self._buffer:
            _write_all(self._fd, self._buffer.tobytes(), self._flushed * self._row)
            self._flushed += len(self._buffer) // self.width
            del self._buffer[:]

    def _at(self, i: int) -> int:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return i

    def __getitem__(self, i: int) -> Any:
        i = self._at(i)
        if i >= self._flushed:
            j = (i - self._flushed) * self.width
            return self._buffer[j] if self.width == 1 else tuple(self._buffer[j:j + self.width])
        row = struct.unpack(self._fmt, os.pread(self._fd, self._row, i * self._row))
        return row[0] if self.width == 1 else row

    def __setitem__(self, i: int, row: Any) -> None:
        i = self._at(i)
        values = (row,) if self.width == 1 else tuple(row)
        if i >= self._flushed:
            j = (i - self._flushed) * self.width
            self._buffer[j:j + self.width] = array("q", values)
        else:
            _write_all(self._fd, struct.pack(self._fmt, *values), i * self._row)

    def __iter__(self) -> Iterator[Any]:
        """Every row in order, read a block at a time."""
        return self.rows(0, len(self))

    def rows(self, lo: int, hi: int) -> Iterator[Any]:
        """Rows `lo` to `hi` (not included), read a block at a time."""
        self._flush()
        block, hi = 1024, min(hi, self._flushed)
        for at in range(lo, hi, block):
            n = min(block, hi - at)
            values = array("q")
            values.frombytes(os.pread(self._fd, n * self._row, at * self._row))
            if self.width == 1:
                yield from values
            else:
                for j in range(0, len(values), self.width):
                    yield tuple(values[j:j + self.width])

    def first_at_least(self, value: int) -> int:
        """The first row whose first number is `value` or more, the rows ascending by it (bisection)."""
        self._flush()
        lo, hi = 0, self._flushed
        while lo < hi:
            mid = (lo + hi) // 2
            row = self[mid]
            if (row if self.width == 1 else row[0]) < value:
                lo = mid + 1
            else:
                hi = mid
        return lo


class DiskStrings:
    """Strings in a file of the spool's folder, each found by its (offset, length) in a
    `DiskArray`: a sweep's run names, none of them held (issue 28). A string set anew is
    written at the end (the old bytes stay, unread)."""

    def __init__(self, folder: str) -> None:
        fd, path = tempfile.mkstemp(dir=folder, suffix=".str")
        os.unlink(path)
        self._fd, self._end = fd, 0
        self._where = DiskArray(folder, width=2)
        weakref.finalize(self, _close, fd)

    def __len__(self) -> int:
        return len(self._where)

    def _put(self, text: str) -> tuple[int, int]:
        data = text.encode("utf-8", "surrogatepass")  # every str, lone surrogates of odd file names too
        _write_all(self._fd, data, self._end)
        self._end += len(data)
        return self._end - len(data), len(data)

    def append(self, text: str) -> None:
        self._where.append(self._put(text))

    def __setitem__(self, i: int, text: str) -> None:
        self._where[i] = self._put(text)

    def __getitem__(self, i: int) -> str:
        offset, n = self._where[i]
        return os.pread(self._fd, n, offset).decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        for offset, n in self._where:
            yield os.pread(self._fd, n, offset).decode("utf-8", "surrogatepass")


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


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
