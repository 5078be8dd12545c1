"""Tool-level rules that belong to no language family."""

from ...findings import Severity
from ..registry import RuleSpec

RULES = [
    RuleSpec(
        id="NA100",
        name="unused-suppression",
        category="unused-suppression",
        severity=Severity.WARNING,
        summary="A `# noqa: ID` or `// nki-assist: ignore[ID]` comment suppresses nothing on its line.",
        fix="Remove the suppression, or the rule id that no longer fires, from the comment.",
        languages=("nki", "cuda"),
    ),
]
