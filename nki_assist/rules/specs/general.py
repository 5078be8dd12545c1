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
        doc="""\
## What it finds
A suppression comment — `# noqa: NKI103` in an NKI file or `// nki-assist: ignore[CUDA101]` in a
CUDA file — on a line where the named rule did not fire.

## Why it matters on Trainium
Suppressions are how a team records "we checked this limit by hand". A stale one hides the next real
defect on that line (say a PSUM tile that grows past its 2 KiB bank after a block size change) and
tells readers a hazard exists where none does.

## Example
```python
acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)  # noqa: NKI103
```
The tile is exactly one bank, so NKI103 does not fire and the comment is unused.

## Fix
Delete the suppression, or only the rule ids in it that no longer fire.
""",
    ),
]
