"""What a check run is asked to do: `CheckOptions`, rule selection (select/ignore, per-file ignores),
severity overrides from the config, and which language a path is."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..api.hardware import DEFAULT_TARGET
from ..config import DEFAULT_MAX_FILE_BYTES
from ..severity import Severity

NKI_SUFFIXES = (".py",)


CUDA_SUFFIXES = (".cu", ".cuh")


@dataclass
class CheckOptions:
    target: str = "trn2"
    select: list[str] | None = None  # rule ids, id prefixes ("NKI1") or kebab names; None = all
    ignore: list[str] = field(default_factory=list)
    fail_on: str = "error"
    # Additive (config file): glob -> selectors, rule -> severity, size limit, glob base, walk excludes.
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    severity: dict[str, str] = field(default_factory=dict)
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    root: str | None = None
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    respect_gitignore: bool = True
    # target NKI version ("0.3"); None: inferred per file from the project's pins (api/version.py)
    nki_version: str | None = None
    # the project model of the files checked together (check_paths builds it; None: each file alone)
    project: Any = None


def options_from_config(cfg, **overrides) -> "CheckOptions":
    """CheckOptions from a `nki_assist.config.Config`; keyword overrides (CLI flags) win when not None."""

    opts = CheckOptions(
        target=cfg.target or DEFAULT_TARGET,
        select=cfg.select,
        ignore=list(cfg.ignore),
        fail_on=cfg.fail_on or "error",
        per_file_ignores=dict(cfg.per_file_ignores),
        severity=dict(cfg.severity),
        max_file_bytes=cfg.max_file_bytes,
        root=str(cfg.root) if cfg.root else None,
        exclude=list(cfg.exclude),
        extend_exclude=list(cfg.extend_exclude),
        respect_gitignore=cfg.respect_gitignore,
        nki_version=getattr(cfg, "nki_version", None),
    )
    for key, value in overrides.items():
        if value is not None:
            setattr(opts, key, value)
    return opts


def _selector_matches(selector: str, rule_id: str, name: str) -> bool:
    s = selector.strip()
    return s.upper() == "ALL" or rule_id.startswith(s.upper()) or s.lower() == name


def rule_enabled(rule_id: str, name: str, select: list[str] | None, ignore: list[str]) -> bool:
    if select is not None and not any(_selector_matches(s, rule_id, name) for s in select):
        return False
    return not any(_selector_matches(s, rule_id, name) for s in ignore)


def unknown_selectors(selectors: list[str]) -> list[str]:
    """Selectors that match no registered rule (a typo the CLI reports as a usage error)."""
    if not selectors:
        return []

    # deferred: the registry (and pydantic) load only when a selector must be validated
    from ..rules.registry import all_rules

    rules = all_rules()
    return [s for s in selectors if not any(_selector_matches(s, r.id, r.name) for r in rules)]


def file_ignores(path: str, options: CheckOptions) -> list[str]:
    """The selectors per-file-ignores switches off for `path` (gitwildmatch globs, relative to the root)."""
    if not options.per_file_ignores:
        return []
    # deferred: pathspec loads only when there are globs to match
    from .walk import glob_matches, relative_to_root

    rel = relative_to_root(path, options.root)
    out: list[str] = []
    for pattern, selectors in options.per_file_ignores.items():
        if glob_matches(pattern, rel):
            out.extend(selectors)
    return out


@lru_cache(maxsize=64)
def _severity_overrides(items: tuple[tuple[str, str], ...]) -> dict[str, Severity]:
    # deferred: the registry (and pydantic) load only when a text is checked
    from ..rules.registry import get

    out = {}
    for rule, level in items:
        try:
            out[get(rule).id] = Severity(level)
        except (KeyError, ValueError):
            continue  # reported by the CLI's option validation
    return out


def language_of(path: str) -> str | None:
    suffix = Path(path).suffix.lower()
    if suffix in NKI_SUFFIXES:
        return "nki"
    if suffix in CUDA_SUFFIXES:
        return "cuda"
    return None
