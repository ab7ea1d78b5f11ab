"""spikelens: post-mortem analysis of machine-learning training logs."""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["analyze", "discover", "load", "load_runs", "roles_of", "stitch", "watch", "__version__"]


def __getattr__(name: str):
    """The API functions and the submodules, imported on first use: `import spikelens`
    stays cheap, so the program can take over Ctrl-C before Polars loads (interrupts)."""
    from importlib import import_module

    if name in __all__:
        return getattr(import_module(".api", __name__), name)
    try:
        return import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
