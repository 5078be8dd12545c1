"""Diagnosis of a port that passes at some sizes and fails at others (issue 39).

Error anatomy (anatomy.py) -> backward slice over the run's provenance and the kernel's def-use chains
(slice.py) -> candidate edits of the top lines (mutate.py) re-run on every size in the sandboxed child
(repair.py). `diagnose` (core.py) is the one entry; `to_finding` turns its result into a DIAG finding.
"""

from .core import DEFAULT_BUDGET_S, PROVEN, Diagnosis, Repair, diagnose
from .finding import to_finding

__all__ = ["DEFAULT_BUDGET_S", "PROVEN", "Diagnosis", "Repair", "diagnose", "to_finding"]
