"""Sorting more keys than a sweep's parent should hold (issue 28): (key, position) pairs
sorted in chunks of `CHUNK`, each chunk written to a file of the spool's folder, the files
merged `FAN_IN` at a time until one merge gives the order. Memory: a chunk while sorting,
`FAN_IN` small batches while merging, whatever the number of pairs.

Pairs compare as tuples, so with positions given in ascending order the result is the order
a stable sort by key gives (`sorted(range(n), key=...)`), ties by position.
"""
from __future__ import annotations

import heapq
import os
import pickle
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

CHUNK = 1024
"""Pairs sorted in memory at a time."""
FAN_IN = 16
"""Sorted files merged at a time."""
BATCH = 64
"""Pairs pickled (and read back) together in a sorted file."""


def sorted_pairs(pairs: Iterable[tuple[Any, int]], folder: str) -> Iterator[tuple[Any, int]]:
    """The pairs in sorted order; files in `folder` (a spool's private folder) while they merge."""
    files: list[str] = []
    chunk: list[tuple[Any, int]] = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) == CHUNK:
            chunk.sort()
            files.append(_write(chunk, folder))
            chunk = []
    chunk.sort()
    if not files:  # it fits in one chunk: no file
        yield from chunk
        return
    if chunk:
        files.append(_write(chunk, folder))
    del chunk
    try:
        while len(files) > FAN_IN:
            files = [_write(heapq.merge(*(_read(f) for f in files[i:i + FAN_IN])), folder)
                     for i in range(0, len(files), FAN_IN)]
        yield from heapq.merge(*(_read(f) for f in files))
    finally:
        for f in files:
            _unlink(f)


def _write(pairs: Iterable[tuple[Any, int]], folder: str) -> str:
    fd, path = tempfile.mkstemp(dir=folder, suffix=".sorted")
    with os.fdopen(fd, "wb") as fh:
        batch = []
        for pair in pairs:
            batch.append(pair)
            if len(batch) == BATCH:
                pickle.dump(batch, fh, protocol=pickle.HIGHEST_PROTOCOL)
                batch = []
        if batch:
            pickle.dump(batch, fh, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _read(path: str) -> Iterator[tuple[Any, int]]:
    """A sorted file's pairs, a batch at a time; the file goes once read."""
    try:
        with open(path, "rb") as fh:
            while True:
                try:
                    batch = pickle.load(fh)
                except EOFError:
                    return
                yield from batch
    finally:
        _unlink(path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
