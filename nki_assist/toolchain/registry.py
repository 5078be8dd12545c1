"""Backend lookup by name."""

from __future__ import annotations

from .base import Backend
from .builtin import BuiltinBackend
from .neuron import NeuronBackend

BACKENDS: dict[str, type[Backend]] = {"builtin": BuiltinBackend, "neuron": NeuronBackend}
DEFAULT_BACKEND = "builtin"


def available_backends() -> list[str]:
    """Names of the backends that can run here, default first."""
    return [name for name, cls in BACKENDS.items() if cls.available()]


def get_backend(name: str | None = None, **options) -> Backend:
    """A backend instance; ValueError naming the reason when it is unknown or cannot run here."""
    name = name or DEFAULT_BACKEND
    cls = BACKENDS.get(name)
    if cls is None:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    if not cls.available():
        raise ValueError(f"backend {name!r} is not available here: {cls.why_unavailable()}")
    return cls(**options)
