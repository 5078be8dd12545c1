"""Where the prompt templates and rubrics live: the repo checkout first, then the wheel's data dir."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent.parent  # nki_assist/


_MARKER = {"prompts": "manifest.toml", "rubrics": "default.toml"}


def data_dir(kind: str) -> Path:
    """`prompts` or `rubrics`: <repo>/<kind> in a checkout, nki_assist/_data/<kind> in a wheel.

    A marker file must exist, so an unrelated `prompts/` beside an installed package is never used.
    """
    for root in (_PKG.parent / kind, _PKG / "_data" / kind):
        if (root / _MARKER[kind]).is_file():
            return root
    raise FileNotFoundError(f"nki-assist data directory {kind!r} not found (broken install?)")
