"""The target NKI version: which release's facts a check holds the code to (like ruff's target-version).

Resolution order (`resolve_nki_version`): an explicit value (`--nki-version`, then `[tool.nki-assist]
nki-version`), then the project's pins (the nearest pyproject.toml / requirements*.txt / constraints*.txt
at or above the file that pins `nki`), then the installed real `nki` package, then `DEFAULT_NKI_VERSION`
(the newest release the API table covers). Values are NKI versions ("0.3", "0.3.0") or Neuron SDK
releases ("2.29", "sdk-2.29"), which the release notes map to the NKI version they ship.

A `neuronx-cc` pin alone does not give the version: the compiler's version numbers are not the SDK's,
and the table has no mapping for them (the choice's `note` says so).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import table

DEFAULT_NKI_VERSION = table.latest()
_REQ = re.compile(r"^\s*(nki|neuronx-cc|neuronx_cc)\s*(?:\[[^\]]*\])?\s*(===|==|~=|>=|>)\s*v?([0-9][0-9.*]*)",
                  re.I | re.M)
_REQ_FILES = ("requirements*.txt", "constraints*.txt")


@dataclass(frozen=True)
class VersionChoice:
    version: str  # "0.3"
    source: str  # "--nki-version" | "pyproject.toml nki-version" | "<file>: nki==0.3.0" | "installed nki" | "default"
    note: str = ""  # what was seen but not used (a neuronx-cc pin), when anything


def target_version(target) -> str:
    """The NKI version a `hardware.Target` carries (its `nki_version`), else the default."""
    return getattr(target, "nki_version", None) or DEFAULT_NKI_VERSION


def _pins_in(text: str) -> list[tuple[str, str]]:
    return [(m.group(1).lower().replace("_", "-"), m.group(3)) for m in _REQ.finditer(text)]


def _pyproject_requirements(path: Path) -> str:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    reqs: list[str] = list(data.get("project", {}).get("dependencies", []) or [])
    for group in (data.get("project", {}).get("optional-dependencies", {}) or {}).values():
        reqs.extend(group or [])
    for group in (data.get("dependency-groups", {}) or {}).values():
        reqs.extend(r for r in group or [] if isinstance(r, str))
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}) or {}
    for name, spec in poetry.items():
        ver = spec.get("version") if isinstance(spec, dict) else spec
        if isinstance(ver, str):
            reqs.append(f"{name}{ver if ver[:1] in '=<>~' else '==' + ver}")
    return "\n".join(r for r in reqs if isinstance(r, str))


@lru_cache(maxsize=256)
def _infer_in(directory: str) -> VersionChoice | None:
    here = Path(directory)
    note = ""
    for d in (here, *here.parents):
        files = [d / "pyproject.toml"] + [p for pat in _REQ_FILES for p in sorted(d.glob(pat))]
        for f in files:
            if not f.is_file():
                continue
            text = _pyproject_requirements(f) if f.name == "pyproject.toml" else _read(f)
            for pkg, ver in _pins_in(text):
                if pkg == "nki":
                    v = table.normalize_version(ver.replace("*", "0"))
                    if v:
                        return VersionChoice(v, f"{f}: nki {ver}")
                elif not note:
                    note = f"{f} pins neuronx-cc {ver}, whose version does not name the NKI release; " \
                           "set nki-version"
        if (d / ".git").exists():
            break
    if note:
        return VersionChoice("", "", note)
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def infer_nki_version(start: Path | str) -> VersionChoice | None:
    """The version the project's pins (at or above `start`, a file or directory) or the installed `nki`
    name; None when neither does."""
    p = Path(start).absolute()
    found = _infer_in(str(p if p.is_dir() else p.parent))
    if found is not None and found.version:
        return found
    inst = table.installed_version()
    if inst:
        return VersionChoice(inst, "installed nki", found.note if found else "")
    return found


def resolve_nki_version(explicit: str | None = None, start: Path | str | None = None,
                        explicit_source: str = "nki-version") -> VersionChoice:
    """The target NKI version: `explicit` (raises ValueError when it names no known version), else the
    pins / installed package found from `start`, else the default."""
    if explicit:
        v = table.normalize_version(explicit)
        if v is None:
            raise ValueError(f"unknown NKI version {explicit!r}; give an NKI version "
                             f"({table.legacy_version()}, {', '.join(table.versions())}) or an SDK release "
                             f"({', '.join(table.sdk_to_nki())})")
        return VersionChoice(v, explicit_source)
    found = infer_nki_version(start) if start is not None else None
    if found is not None and found.version:
        return found
    return VersionChoice(DEFAULT_NKI_VERSION, "default", found.note if found else "")
