"""The program asks Polars' jemalloc to return freed pages at once (#28, leaner runs);
a host importing spikelens and a user's own setting are left alone."""
from __future__ import annotations

import os
import subprocess
import sys

from spikelens import allocator

_PROBE = ("import sys\n"
          "sys.argv[0] = {argv0!r}\n"
          "import spikelens.cli, os\n"
          "print(os.environ.get({var!r}), 'polars' in sys.modules)\n")


def _probe(argv0: str, **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k != allocator.JEMALLOC_CONF}
    out = subprocess.run([sys.executable, "-c", _PROBE.format(argv0=argv0, var=allocator.JEMALLOC_CONF)],
                         env={**clean, **env}, capture_output=True, text=True, check=True).stdout
    return out.split()


def test_sets_the_decay_unless_the_user_chose():
    env: dict[str, str] = {}
    allocator.return_freed_pages(env)
    assert env == {allocator.JEMALLOC_CONF: "dirty_decay_ms:0,muzzy_decay_ms:0"}
    mine = {allocator.JEMALLOC_CONF: "narenas:2"}
    allocator.return_freed_pages(mine)
    assert mine == {allocator.JEMALLOC_CONF: "narenas:2"}


def test_the_program_sets_it_before_polars_loads_and_a_host_does_not():
    # the `spikelens` script: set when the CLI is imported, Polars not loaded yet
    assert _probe("/venv/bin/spikelens") == [allocator.RETURN_AT_ONCE, "False"]
    assert _probe("host.py") == ["None", "False"]  # a host importing the CLI keeps its allocator


_TRIM_PROBE = """
import sys
from spikelens import allocator

def anon_kb():
    with open('/proc/self/status') as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith('RssAnon'))

allocator.trim_heap()  # the start: what Python's own start-up left free is not counted below
if not allocator._GLIBC:
    print('no-glibc'); sys.exit()
blocks = [b'x' * 100_000 for _ in range(400)]  # 40 MB of heap blocks (each under the mmap threshold)
held = anon_kb()
del blocks[::2]  # every other one: 20 MB free between live blocks, which free() cannot hand back itself
freed_untrimmed = anon_kb()
allocator.trim_heap()
print(held, freed_untrimmed, anon_kb())
"""


def test_trim_heap_returns_what_numpy_sized_frees_left_on_the_heap():
    # glibc keeps freed blocks below the heap's top; trim_heap hands their pages back (the
    # detectors' freed arrays are then not held beside the next detector's Polars temporaries)
    if not sys.platform.startswith("linux"):
        return
    out = subprocess.run([sys.executable, "-c", _TRIM_PROBE], capture_output=True, text=True, check=True).stdout
    if out.strip() == "no-glibc":
        return
    held, freed_untrimmed, trimmed = map(int, out.split())
    assert freed_untrimmed > held - 5_000  # freed, yet still resident: glibc kept it
    assert trimmed < held - 15_000  # given back: at least 15 of the 20 MB
