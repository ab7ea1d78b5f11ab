"""The one place that imports torch, so the rest of spikelens never needs it.

Torch is the optional `replay` extra; every replay function asks for it here and a
missing install becomes a one-line ReplayError (exit 2), never an ImportError.
"""
from __future__ import annotations

from types import ModuleType

from ..errors import ReplayError

INSTALL_HINT = "pip install 'spikelens[replay]'"


def require_torch() -> ModuleType:
    """Import torch or explain how to get it."""
    try:
        import torch
    except ImportError as exc:
        raise ReplayError(f"spikelens replay needs PyTorch, which is not installed ({exc}): "
                          f"{INSTALL_HINT}") from None
    return torch
