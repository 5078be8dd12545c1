"""Public names of a package loaded on first use (PEP 562), so importing one name stays cheap."""

from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_exports(package: str, public: dict[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], Any]]:
    """`__all__` and a module `__getattr__` for `package`, whose public names live in its submodules
    (`{"engine": ("check_text", ...)}`); a name is imported from its module when first read, then kept."""
    where = {name: module for module, names in public.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return sorted(where), __getattr__
