"""Rule registry: id, kebab name, category, criterion, default severity, docs page.

Every family lists its rules as `RuleSpec`s in a module under `rules/specs/`; this module collects
them. Checks live elsewhere (rules/, sim/, numerics/, perf/) and look their metadata up here, so the
registry never imports upward.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .. import taxonomy
from ..findings import Finding, Severity, Source

from . import specs

DOCS_BASE_URL = "https://github.com/nki-assist/nki-assist/blob/main/docs/rules/"


@dataclass(frozen=True)
class RuleSpec:
    id: str  # e.g. "NKI103"
    name: str  # kebab-case, reads as the defect ("psum-tile-exceeds-bank")
    category: str  # taxonomy category
    severity: Severity  # default severity
    summary: str  # one line: what it finds
    source: Source = "static"
    fix: str | None = None  # default fix text
    languages: tuple[str, ...] = ("nki",)  # nki | cuda | port
    # The docs page body (markdown: `## What it finds`, `## Why it matters on Trainium`, `## Example`,
    # `## Fix`): docs/rules/<name>.md, the LSP hover and `nki-assist explain` are generated from it.
    doc: str = field(default="", repr=False, compare=False)
    category_note: str = ""  # shown after the criterion on the docs page (e.g. a per-finding category)

    @property
    def criterion(self) -> str:
        return taxonomy.criterion_of(self.category)

    @property
    def docs_page(self) -> str:
        return f"docs/rules/{self.name}.md"

    @property
    def docs_url(self) -> str:
        return DOCS_BASE_URL + f"{self.name}.md"

    def finding(self, message: str, *, severity: Severity | None = None, **fields: Any) -> Finding:
        """A Finding of this rule; metadata filled from the spec, everything else from fields."""
        fields.setdefault("fix", self.fix)
        fields.setdefault("source", self.source)
        return Finding(
            rule=self.id,
            name=self.name,
            category=fields.pop("category", None) or self.category,
            severity=severity or self.severity,
            message=message,
            **fields,
        )


_PROBLEMS: list[str] = []


def registry_problems() -> list[str]:
    """Duplicate ids or names found while loading the specs (must be empty; a test checks it)."""
    _all()
    return list(_PROBLEMS)


@cache
def _all() -> dict[str, RuleSpec]:

    rules: dict[str, RuleSpec] = {}
    names: dict[str, str] = {}
    for mod in pkgutil.iter_modules(specs.__path__):
        module = importlib.import_module(f"{specs.__name__}.{mod.name}")
        for spec in getattr(module, "RULES", ()):
            if spec.id in rules or spec.name in names:
                # Reported by registry_problems() (and its test) instead of breaking every import.
                _PROBLEMS.append(f"duplicate rule {spec.id} {spec.name} in {module.__name__}")
                continue
            spec.criterion  # validates the category
            rules[spec.id] = spec
            names[spec.name] = spec.id
    return dict(sorted(rules.items()))


def all_rules() -> list[RuleSpec]:
    return list(_all().values())


def get(rule: str) -> RuleSpec:
    """Look a rule up by id (case-insensitive) or kebab name."""
    rules = _all()
    key = rule.strip()
    if key.upper() in rules:
        return rules[key.upper()]
    for spec in rules.values():
        if spec.name == key.lower():
            return spec
    raise KeyError(f"unknown rule {rule!r}; `nki-assist rules` lists them")


def page(spec: RuleSpec) -> str:
    """The docs page of a rule: title, one generated metadata line, then the spec's `doc`."""
    note = f"; {spec.category_note}" if spec.category_note else ""
    head = (f"# {spec.name} ({spec.id})\n\n"
            f"Category: `{spec.category}` ({spec.criterion}{note}) · default severity: `{spec.severity.value}` · "
            f"source: {spec.source}\n")
    body = spec.doc or f"## What it finds\n{spec.summary}\n"
    return head + "\n" + body


def docs_text(rule: str) -> str:
    """The rule's docs page (markdown), generated from its spec (docs/rules/<name>.md is the same text)."""
    return page(get(rule))
