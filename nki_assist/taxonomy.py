"""The project's review taxonomy: criteria and the categories that belong to each."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

_PATH = Path(__file__).with_name("taxonomy.toml")

# Order in which criteria are presented and prioritised (correctness first).
CRITERIA_ORDER = (
    "migration-correctness",
    "memory-hierarchy",
    "numerical-accuracy",
    "hardware-utilization",
    "review-hygiene",
)


@cache
def _load() -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    data = tomllib.loads(_PATH.read_text(encoding="utf-8"))
    criteria = dict(data["criteria"]) | dict(data.get("criteria-extra", {}))
    category_criterion: dict[str, str] = {}
    category_text: dict[str, str] = {}
    for criterion, cats in data["categories"].items():
        for slug, text in cats.items():
            category_criterion[slug] = criterion
            category_text[slug] = text
    return criteria, category_criterion, category_text


def criteria() -> dict[str, str]:
    """Criterion slug -> question it answers."""
    return dict(_load()[0])


def rubric_criteria() -> tuple[str, ...]:
    """The four scored criteria from the shared taxonomy (no project extras)."""
    return tuple(c for c in CRITERIA_ORDER if c != "review-hygiene")


def categories() -> dict[str, str]:
    """Category slug -> criterion slug."""
    return dict(_load()[1])


def category_description(category: str) -> str:
    return _load()[2][category]


def criterion_of(category: str) -> str:
    try:
        return _load()[1][category]
    except KeyError:
        raise ValueError(f"unknown category {category!r} (not in taxonomy.toml)") from None


def criterion_rank(criterion: str) -> int:
    return CRITERIA_ORDER.index(criterion) if criterion in CRITERIA_ORDER else len(CRITERIA_ORDER)
