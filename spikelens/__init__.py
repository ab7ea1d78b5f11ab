"""spikelens: post-mortem analysis of machine-learning training logs."""
from __future__ import annotations

__version__ = "0.1.0"

from .api import analyze, discover, load, load_runs, roles_of, stitch, watch  # noqa: E402

__all__ = ["analyze", "discover", "load", "load_runs", "roles_of", "stitch", "watch", "__version__"]
