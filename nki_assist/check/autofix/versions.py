"""Fix safety by NKI version: a fix that writes an API newer than the oldest NKI version the project
admits would break the users on that version (renaming `nl.tile_size.psum_fmax` to `psum_bank_fmax`,
new in 0.4, breaks every NKI 0.3 user of a library pinned `nki>=0.0.0a0`). Such a fix stays available,
as an unsafe one whose message says why; `check --fix` does not apply it."""

from __future__ import annotations

import re

from ...findings import Finding

_API = re.compile(r"`((?:nl|nisa|nki)\.[A-Za-z_][\w.]*)`")


def needed_version(message: str) -> str | None:
    """The newest `introduced` version of the NKI APIs a fix's message names (`Rename to `nl.x``), else None."""
    from ...api import table  # local: the table loads only when a fix is checked

    need = None
    for name in _API.findall(message):
        e = table.lookup(name)
        if e is not None and e.introduced and (need is None or table.vkey(e.introduced) > table.vkey(need)):
            need = e.introduced
    return need


def version_safety(findings: list[Finding], oldest: str) -> list[Finding]:
    """Findings whose safe fix needs an NKI newer than `oldest` (the oldest admitted version) get that fix
    as an unsafe one, with the reason in its message."""
    from ...api import table  # local: the table loads only when a fix is checked

    out = []
    for f in findings:
        fix = f.autofix
        if fix is not None and fix.applicability == "safe":
            need = needed_version(fix.message)
            if need and table.vkey(need) > table.vkey(oldest):
                fix = fix.model_copy(update={
                    "applicability": "unsafe",
                    "message": f"{fix.message} (unsafe: needs NKI {need}; the project admits NKI {oldest}, "
                               "which lacks it)"})
                f = f.model_copy(update={"autofix": fix})
        out.append(f)
    return out
