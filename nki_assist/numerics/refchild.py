"""Inside the reference's child process: import the user's file and call the function.

Kept free of heavy nki_assist imports (only contracts.callargs; no ml_dtypes, ~2 s to import on a loaded machine): the
reference only ever sees float64 / int arrays and plain values.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ..contracts.callargs import for_reference


def child_call(path: str, function: str, args: list, source: bytes | None = None) -> Any:
    """`source`: the file's bytes as the parent read them before any kernel ran (a kernel that rewrites
    reference.py later changes nothing); None reads `path` now."""
    name = f"_nki_assist_reference_{Path(path).stem}"
    if source is None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, None, origin=path))
        module.__file__ = path
        exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    pos, kw = for_reference(args)  # keyword inputs by name, spec-named values as plain data
    return getattr(module, function)(*pos, **kw)
