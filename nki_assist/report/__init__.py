"""Renderers of findings: text, json and sarif for `check` (markdown/html for reviews live beside).

Each renderer module exposes `render(report) -> str`; `render_check` picks one by format name.
Modules are imported on demand so the CLI only pays for the format it prints.
"""

from __future__ import annotations

import importlib

CHECK_FORMATS = {"text": "text", "json": "jsonout", "sarif": "sarif", "github": "github"}


def render_check(report, fmt: str, **kwargs) -> str:
    """Render a `nki_assist.check.engine.CheckReport` as text, json, sarif or GitHub annotations."""
    try:
        module = CHECK_FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(CHECK_FORMATS)}") from None
    return importlib.import_module(f"{__name__}.{module}").render(report, **kwargs)
