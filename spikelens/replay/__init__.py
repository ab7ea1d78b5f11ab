"""`spikelens replay`: re-run one training step under anomaly detection.

Torch is optional (`pip install 'spikelens[replay]'`); nothing here imports it at
import time, so `import spikelens.replay` works everywhere and the functions that
need torch say so in one line.

    from spikelens.replay import ReplayTarget, replay
    report = replay("train.py:build", step=1200, checkpoint="ckpt_1000.pt")
    report = replay("out/checkpoint-1000", step=1042, captures="out/spikelens-captures")  # no code
    report = replay("out/checkpoint-1000", bisect="1001..1032")  # the first bad step
"""
from __future__ import annotations

from .capture import (build_from_captures, capture, captured_batch, captured_steps, load_capture,
                      restore_rng)
from .callbacks import CaptureTrigger, hf_callback, lightning_callback
from .report import SCHEMA_ID, render_json, report_dict
from .outcome import ReplayReport
from .session import replay
from .target import ReplayTarget

__all__ = [
    "ReplayTarget", "ReplayReport", "replay", "capture", "load_capture", "captured_batch", "captured_steps",
    "restore_rng", "build_from_captures", "CaptureTrigger", "hf_callback", "lightning_callback",
    "SCHEMA_ID", "report_dict", "render_json",
]
