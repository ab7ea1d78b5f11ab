"""The `spikelens` program asks Polars' allocator to hand freed memory back at once.

Polars allocates with its own jemalloc, NumPy with the C library's malloc: pages one of
them has freed but keeps cannot serve the other, so an analysis's peak memory is the sum
of both high-water marks. jemalloc keeps freed pages ~10 s by default (its decay time),
longer than a whole analysis of a 1M-point run, so every Polars temporary of the read and
the stitch still counts when the detectors' NumPy arrays peak. Returned at once, the peak
of a 1M-point analysis is 4-7 MB lower (benchmarks/README.md, session 12), at no CPU cost
measurable on this machine.

Only the program does this (its process is its own; a host importing spikelens keeps its
allocator as it set it), before Polars loads (jemalloc reads its settings when it
starts), and a setting the user made wins. Sweep workers inherit it with the environment.
This module imports only `os` (and `ctypes` when the heap is first trimmed).

NumPy's freed arrays are the other half: glibc keeps a freed block of up to 32 MB on its heap
(its mmap threshold rises to the largest block freed), where Polars' jemalloc cannot use it.
`trim_heap` hands those pages back between detectors (`detect.engine.run_detectors`), so the
next detector's Polars temporaries do not stack on NumPy pages nothing holds any more.
"""
from __future__ import annotations

import os
from typing import MutableMapping

JEMALLOC_CONF = "_RJEM_MALLOC_CONF"
"""The variable Polars' jemalloc reads its settings from (its build prefixes jemalloc's names)."""
RETURN_AT_ONCE = "dirty_decay_ms:0,muzzy_decay_ms:0"
"""Freed pages go back to the system when freed, not ~10 s later."""


def return_freed_pages(environ: MutableMapping[str, str] = os.environ) -> None:
    """Ask Polars' jemalloc (when it starts, later in this process) to return freed pages at once."""
    environ.setdefault(JEMALLOC_CONF, RETURN_AT_ONCE)


_GLIBC = None
TRIM_FROM_BYTES = 1 << 20
"""Below this much newly freed heap a trim returns too little to pay for the faults of its reuse."""
_free_after_trim = 0


def trim_heap() -> None:
    """Return the C library's free heap pages to the system (glibc's `malloc_trim`) when at least
    `TRIM_FROM_BYTES` more is free than after the last trim (a trimmed block still counts as free);
    nothing where the C library is not glibc (macOS, musl)."""
    global _GLIBC, _free_after_trim
    if _GLIBC is None:
        _GLIBC = _find_glibc()
    if not _GLIBC:
        return
    free = _GLIBC.mallinfo2().fordblks
    if free >= _free_after_trim + TRIM_FROM_BYTES:
        _GLIBC.malloc_trim(0)
        _free_after_trim = _GLIBC.mallinfo2().fordblks
    else:  # what was reused since is no longer free: count the next frees from here
        _free_after_trim = min(_free_after_trim, free)


def _find_glibc():
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    try:  # the process's own symbols: the C library it runs on (no library search, no subprocess)
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, TypeError, AttributeError):  # not glibc 2.33+: no mallinfo2 / malloc_trim
        return False
