"""Optional dependencies: which extra installs what, and one clear error when it is missing.

`pip install nki-assist` is the linter and the language server; plots need `[report]` (matplotlib),
the LLM drafter `[llm]` (openai); `[all]` has both. Batch reviews on Ray need `[ray]`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS = {"matplotlib": "report", "openai": "llm", "ray": "ray"}


class MissingExtra(ImportError):
    """A feature needs an optional dependency that is not installed; the message says how to get it."""


def require(module: str, feature: str) -> ModuleType:
    """Import `module` or raise MissingExtra naming the pip extra that provides it."""
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".", 1)[0] != top:
            raise  # the package is there but one of its own dependencies is broken
        extra = EXTRAS.get(top, "all")
        raise MissingExtra(f"{feature} needs {top}, which is not installed: "
                           f"pip install 'nki-assist[{extra}]'") from None


def available(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
