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
This module imports only `os`.
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
