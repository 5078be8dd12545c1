"""Rule registry: id, kebab name, category, criterion, default severity, docs page.

Each static rule's `RuleSpec` sits in the module that checks it (a `RULES` list in rules/nki/*.py,
rules/cuda/*.py, rules/migration/*.py): adding a rule touches that module and its fixtures only. Rules
whose checks run above this layer (the simulator's SIM, numerics' NUM, the cost model's PERF/PROF, the
toolchain's TC, the tool's own NA) list their specs in rules/specs/, so the registry never imports upward.
This module collects both, one family at a time: looking a SIM rule up never imports the static checks.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .. import taxonomy
from . import policy
from ..findings import Finding, Severity, Source

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
    # Severity policy (rules/policy.py): the rule's kind ("" = derived from category and default severity) and
    # the severities its checks give besides the default; the docs page states both, a test enforces them.
    policy: str = ""
    emits: tuple[Severity, ...] = ()

    @property
    def criterion(self) -> str:
        return taxonomy.criterion_of(self.category)

    @property
    def kind(self) -> str:
        return self.policy or policy.default_kind(self.category, self.criterion, self.severity, self.source)

    @property
    def severities(self) -> tuple[Severity, ...]:
        """Every severity the rule's findings may have, most severe first."""
        return tuple(sorted({self.severity, *self.emits}, key=lambda s: s.rank))

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


# id prefix -> the package whose modules list those rules beside their checks; other ids: rules/specs/
FAMILIES = {"NKI": "nki", "CUDA": "cuda", "MIG": "migration"}
_SPECS = "specs"


def _modules(package: str) -> list:
    pkg = importlib.import_module(f"{__package__}.{package}")
    return [importlib.import_module(f"{pkg.__name__}.{m.name}")
            for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name)]


@cache
def _family(package: str) -> dict[str, RuleSpec]:
    return {spec.id: spec for module in _modules(package) for spec in getattr(module, "RULES", ())}


def _family_of(rule_id: str) -> str:
    prefix = rule_id.rstrip("0123456789")
    return FAMILIES.get(prefix, _SPECS)


@cache
def _all() -> dict[str, RuleSpec]:
    rules: dict[str, RuleSpec] = {}
    names: dict[str, str] = {}
    for package in (_SPECS, *FAMILIES.values()):
        for module in _modules(package):
            for spec in getattr(module, "RULES", ()):
                if spec.id in rules or spec.name in names:
                    # Reported by registry_problems() (and its test) instead of breaking every import.
                    _PROBLEMS.append(f"duplicate rule {spec.id} {spec.name} in {module.__name__}")
                    continue
                if _family_of(spec.id) != package:
                    _PROBLEMS.append(f"rule {spec.id} in {module.__name__}: its id prefix belongs to "
                                     f"rules/{_family_of(spec.id)}/")
                spec.criterion  # validates the category
                rules[spec.id] = spec
                names[spec.name] = spec.id
    return dict(sorted(rules.items()))


def all_rules() -> list[RuleSpec]:
    return list(_all().values())


def get(rule: str) -> RuleSpec:
    """Look a rule up by id (case-insensitive) or kebab name."""
    key = rule.strip()
    spec = _family(_family_of(key.upper())).get(key.upper())
    if spec is not None:
        return spec
    rules = _all()
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
    sevs = ", ".join(f"`{s.value}`" for s in spec.severities)
    rule = (f"\n## Severity policy\nKind: {spec.kind} (gives {sevs}). {policy.statement(spec.kind)} "
            "The policy for every rule: docs/check.md#severity-policy.\n")
    return head + "\n" + body.rstrip("\n") + "\n" + rule


def docs_text(rule: str) -> str:
    """The rule's docs page (markdown), generated from its spec (docs/rules/<name>.md is the same text)."""
    return page(get(rule))
