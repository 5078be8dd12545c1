"""Diagnoses of failing sizes (nki_assist/diagnose): a root-cause line with a fix the simulator proved, or the
error's anatomy and the ranked lines when no candidate edit made every size pass."""

from ...findings import Severity
from ..registry import RuleSpec

RULES = [
    RuleSpec(
        id="DIAG101", name="proven-root-cause", category="output-mismatch", severity=Severity.ERROR,
        source="numerics", languages=("nki",),
        summary="A one-line edit that makes every size of the spec pass in the simulator names the line that "
                "causes the failing size (proven by re-running all sizes).",
        fix="Apply the diff in the finding (it was re-run on every size of the spec).",
        category_note="The finding takes the category of the proven edit (indexing-error, missing-boundary-mask, "
                      "low-precision-accumulation, missing-epilogue).",
        doc="""\
## What it finds
A port that passes at some sizes and fails at others, diagnosed to one source line: the error's
anatomy (which elements are wrong: tiles, bands, a constant ratio, values that belong to other
indices), the backward slice from the wrong elements to the statements that fed them, and a
candidate edit of one of those lines that makes **every** size of the spec (and the distinct-dims
size) match the reference when the simulator re-runs it. The finding sits on that line and carries
the edit as a unified diff in its fix.

## Why it matters on Trainium
A port that matches on small tensors and diverges on large ones is almost always one index, mask,
trip count or dtype that is right only while some dimension is 1 or one tile. Naming the line and
proving the repair saves the element-by-element hunt.

## Example
```python
for t in nl.affine_range(R // 128):
    nl.store(y[t * 64 + i_p, i_f], value=yt)     # 128-row tiles stored 64 rows apart
```
R = 128 passes; R = 512: rows 64..127 hold tile 1's values. Proven edit: `t * 64` -> `t * 128`.

## Fix
Apply the diff; it made every size pass. Read the anatomy in the evidence to see why.
""",
    ),
    RuleSpec(
        id="DIAG102", name="unproven-diagnosis", category="output-mismatch", severity=Severity.INFO,
        source="numerics", languages=("nki",),
        summary="A size fails and no candidate edit within the repair budget made every size pass: the error's "
                "anatomy and the source lines that fed the wrong elements, ranked (not a proven cause).",
        fix="Start at the first ranked line; the anatomy says which elements are wrong and how.",
        doc="""\
## What it finds
A failing size for which no one-line candidate edit of the top suspect lines made every size pass
within the repair budget (`--repair-budget`). The finding is information, not an accusation: it gives
the anatomy of the error (wrong tiles, bands, ratios, permutations, unwritten elements, NaN/Inf), what
differs between the failing and the passing sizes, and the lines of the backward slice ranked by how
well each explains that anatomy.

## Why it matters on Trainium
Where the simulator cannot prove a repair, the shape of the error and the lines that produced the
wrong elements are still the fastest start; a confident but unproven cause would mislead.

## Example
```text
output 0 at size big: 2048 of 65536 elements wrong; axis 0: tiles of 128: only the last tile (3) wrong
lines: 24 `rows = R % 128` (feeds only the stores of wrong elements), 27 `nl.store(...)`
```

## Fix
Read the ranked lines against the anatomy; raise `--repair-budget` to try more candidate edits.
""",
    ),
]
