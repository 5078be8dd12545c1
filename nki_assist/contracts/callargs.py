"""How a port spec's inputs travel to a kernel run and to the reference: one flat, picklable list.

Positional values are plain; `Keyword` marks a keyword argument, `Output` a buffer the caller passes in
and reads back after the call, `Named` a value that only exists inside the kernel's package (an enum
member, an NKI dtype, a config object built from fields). Backends and the reference child split the list
with `split`; a list with none of these markers is the old positional call. No heavy imports: the
reference's child process imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class Keyword:
    name: str
    value: Any


@dataclass(frozen=True)
class Output:
    """A buffer the kernel writes into (`dst`/`out` argument): its contents after the call are an output."""

    value: Any


@dataclass(frozen=True)
class Named:
    """A value resolved by name inside the kernel's module/package at run time.

    kind "enum": `text` is "ActFnType.SiLU"; "dtype": "bfloat16"; "call": `text` names a callable
    ("pkg.mod.Config" or a name the kernel module binds) called with `kwargs` (themselves call values)."""

    kind: str
    text: str
    kwargs: dict = field(default_factory=dict)

    def plain(self) -> Any:
        """What a NumPy reference receives: the enum's text, the dtype's name, a dict of the fields."""
        if self.kind == "call":
            return {k: plain(v) for k, v in self.kwargs.items()}
        return self.text


@dataclass(frozen=True)
class PackageRoot:
    """The folder to import the kernel file's package from (the spec's `package_root`); not an argument."""

    path: str


def package_root(args: list) -> str | None:
    return next((a.path for a in args if isinstance(a, PackageRoot)), None)


def plain(value: Any) -> Any:
    if isinstance(value, Named):
        return value.plain()
    if isinstance(value, Output):
        return plain(value.value)
    if isinstance(value, (list, tuple)):
        return type(value)(plain(v) for v in value)
    return value


def split(args: list) -> tuple[list, dict]:
    """(positional, keyword) from a call list; markers other than Keyword stay on the values."""
    pos, kw = [], {}
    for a in args:
        if isinstance(a, PackageRoot):
            continue
        if isinstance(a, Keyword):
            kw[a.name] = a.value
        else:
            pos.append(a)
    return pos, kw


def map_values(args: list, fn: Callable[[Any], Any]) -> list:
    """Apply fn to every plain value (inside Keyword/Output), keeping the markers."""

    def one(a):
        if isinstance(a, Keyword):
            return Keyword(a.name, one(a.value))
        if isinstance(a, Output):
            return Output(one(a.value))
        if isinstance(a, PackageRoot):
            return a
        return fn(a)

    return [one(a) for a in args]


def for_reference(args: list) -> tuple[list, dict]:
    """The reference's call: same positions and keywords, Named values as plain data, outputs as arrays."""
    pos, kw = split(args)
    return [plain(a) for a in pos], {k: plain(v) for k, v in kw.items()}
