"""`spikelens watch`: the same readers and detectors, fed while a run trains.

tail     follow files: the bytes appended since the last poll, whole records only
judge    keep each run's points, re-judge a trailing window, report each finding once
alerts   --webhook (a background thread) and --exec (never waited for)
state    what was reported, kept outside the log folders, so a restart does not repeat it
watcher  the poll loop that ties them together (what the CLI and `spikelens.watch` run)
"""
from __future__ import annotations
