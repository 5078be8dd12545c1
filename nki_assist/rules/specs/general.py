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
    RuleSpec(
        id="NA101",
        name="unused-bare-suppression",
        category="unused-suppression",
        severity=Severity.INFO,
        summary="A bare `# noqa` suppresses no nki-assist finding on its line.",
        fix="Name the rules the comment is for (`# noqa: E501`), or remove it.",
        languages=("nki",),
        doc="""\
## What it finds
A bare `# noqa` (no rule list) in an NKI file on a line where no nki-assist rule fired, like ruff's
RUF100 for unused blanket suppressions. A bare comment silences every rule of every linter on its line,
so once the finding it was written for is gone it silently hides the next one.

It is an info, not a warning, and its fix is unsafe: other linters (ruff, flake8) read the same bare
`# noqa`, and nki-assist cannot know whether one of them still needs it. A bare
`// nki-assist: ignore` in a CUDA file, which only nki-assist reads, is reported as NA100 instead.

## Why it matters on Trainium
A blanket suppression on an allocation or a matmul line hides the capacity and tile-limit checks
(PSUM banks, SBUF partitions, Tensor Engine tile sizes) that matter most when a block size changes.

## Example
```python
acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)  # noqa
```
The tile fits one PSUM bank, nothing fires, and the comment would hide NKI103 if the tile grew.

## Fix
Write the rule ids the suppression is for (`# noqa: NKI103` or another linter's `# noqa: E501`), or
delete the comment. `check --fix --unsafe-fixes` deletes it.
""",
    ),
]
