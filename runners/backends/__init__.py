"""Compute backends behind one Protocol (`base.Backend`): NumPy (always available) and PyTorch (optional)."""

from __future__ import annotations

import importlib.util

from .base import Backend, Scalar, Trainer, UnsupportedRun

__all__ = ["Backend", "Scalar", "Trainer", "UnsupportedRun", "default_backend", "get_backend"]


def default_backend() -> str:
    """ "torch" when PyTorch is installed, else "numpy"."""
    return "torch" if importlib.util.find_spec("torch") is not None else "numpy"


def get_backend(name: str | None, device: str = "cpu") -> Backend:
    """The backend called `name` (None: the default) on `device`; UnsupportedRun if it cannot be had."""
    name = name or default_backend()
    if name == "numpy":
        from .numpy_backend import NumpyBackend

        return NumpyBackend(device)
    if name == "torch":
        if importlib.util.find_spec("torch") is None:
            raise UnsupportedRun("the torch backend needs PyTorch: pip install 'benchreg[torch]'")
        from .torch_backend import TorchBackend

        return TorchBackend(device)
    raise UnsupportedRun(f"unknown backend {name!r} (known: numpy, torch)")
