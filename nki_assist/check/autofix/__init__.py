"""Mechanical fixes: built from a finding and the source text, applied by `check --fix` and the LSP.

Rules work on extracted facts, never on the text; the edits need the exact characters, so they are
built here, after the rules ran (`attach_fixes`), and applied with `apply_fixes` (`nki_assist.check.fix.fix_text`
re-checks until stable).
"""

from .apply import apply_fixes, selected_fixes
from .builders import FIXABLE_RULES, attach_fixes

__all__ = ["FIXABLE_RULES", "apply_fixes", "attach_fixes", "selected_fixes"]
