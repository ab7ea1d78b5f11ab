"""A sweep's reports on disk, in arrival order: the parent of a sweep of 10^5 runs holds
one run's report at a time, not all of them (issue 28).

Each entry is pickled into one file of a private temporary folder (`mkdtemp`, mode 0700;
in the system's temporary folder or one the caller names) that this process created and alone reads, and is removed with the spool (closed, the
spool collected, or the process ending): never a file another process wrote, so pickle
(exact, frames included, fast) is safe here where a shared findings dataset uses
validated JSON (`statejson`). Entries are read with `pread`, so two passes over the
spool may interleave; `replace` appends the new version and points the entry at it.
"""
from __future__ import annotations

import os
import pickle
import shutil
import tempfile
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
