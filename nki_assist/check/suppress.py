"""In-source suppression comments and the unused-suppression rule (NA100).

Python (NKI): `# noqa: NKI103, NKI201` or a bare `# noqa` (everything on the line).
CUDA: `// nki-assist: ignore[CUDA101, CUDA102]` or a bare `// nki-assist: ignore`.
Both forms also accept kebab rule names. A suppression applies to findings whose first line is the
comment's line. Codes of other tools (`# noqa: E501` for flake8/ruff) are left alone; a code that looks
like an nki-assist rule id (a known family prefix and digits, `NKI999`) but is none is reported as
unknown (NA100). A bare `# noqa` that suppressed nothing is NA101 (info: other linters read it too).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from ..findings import Finding

from ..rules.registry import get

UNUSED_RULE = "NA100"
UNUSED_BARE_RULE = "NA101"

_PY = re.compile(r"#\s*noqa\b(?P<colon>\s*:\s*(?P<codes>[A-Za-z0-9_\-]+(?:[\s,]+[A-Za-z0-9_\-]+)*))?",
                 re.IGNORECASE)
_CUDA = re.compile(r"//\s*nki-assist\s*:\s*ignore\b(?:\s*\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


@dataclass
class Suppression:
    line: int  # 1-based
    column: int  # 1-based column of the comment
    codes: list[str]  # as written; empty = bare (all rules)
    rule_ids: dict[str, str | None] = field(default_factory=dict)  # written code -> rule id (None: not ours)
    used: set[str] = field(default_factory=set)  # rule ids that suppressed something

    @property
    def bare(self) -> bool:
        return not self.codes

    def matches(self, rule: str) -> bool:
        return self.bare or rule in self.rule_ids.values()


def comment_match(line: str, language: str) -> re.Match | None:
    """The suppression comment on one line of source (`codes` group: the listed codes)."""
    return (_PY if language == "nki" else _CUDA).search(line)


# Family prefixes ruff also uses (flake8-simplify SIM, Perflint PERF, flake8-type-checking TC): an unknown
# `# noqa: SIM910` is most likely ruff's, so only nki-assist's own prefixes make a code "ours".
SHARED_PREFIXES = frozenset({"SIM", "PERF", "TC"})


@cache
def _our_code() -> re.Pattern:
    """Codes shaped like nki-assist rule ids: a family prefix only nki-assist uses, and digits."""
    # deferred: the registry's full rule list loads only when a suppression names an unknown code
    from ..rules.registry import all_rules

    prefixes = sorted({m.group() for r in all_rules() if (m := re.match(r"[A-Z]+", r.id))} - SHARED_PREFIXES,
                      key=len, reverse=True)
    return re.compile(rf"(?:{'|'.join(prefixes)})\d+", re.IGNORECASE)


def looks_like_ours(code: str) -> bool:
    return _our_code().fullmatch(code) is not None


def _resolve(code: str) -> str | None:

    try:
        return get(code).id
    except KeyError:
        return None


def parse_suppressions(text: str, language: str) -> dict[int, Suppression]:
    """Suppression comments by 1-based line. `language` is "nki" or "cuda"."""
    pattern, marker = (_PY, "#") if language == "nki" else (_CUDA, "//")
    out: dict[int, Suppression] = {}
    if marker not in text:
        return out
    for n, line in enumerate(text.splitlines(), 1):
        if marker not in line:
            continue
        m = pattern.search(line)
        if not m:
            continue
        codes = [c for c in re.split(r"[\s,]+", m.group("codes") or "") if c]
        sup = Suppression(line=n, column=m.start() + 1, codes=codes)
        for code in codes:
            sup.rule_ids[code] = _resolve(code)
        out[n] = sup
    return out


def apply_suppressions(findings: list[Finding], sups: dict[int, Suppression]) -> tuple[list[Finding], list[Finding]]:
    """Split findings into (kept, suppressed), marking which codes of each comment were used."""
    if not sups:
        return findings, []
    kept, suppressed = [], []
    for f in findings:
        sup = sups.get(f.line) if f.line is not None else None
        if sup is not None and sup.matches(f.rule):
            sup.used.add(f.rule)
            suppressed.append(f)
        else:
            kept.append(f)
    return kept, suppressed


def unused_suppressions(sups: dict[int, Suppression], path: str, language: str,
                        is_enabled=lambda rule: True) -> list[Finding]:
    """NA100 findings for suppression codes that suppressed nothing, NA101 for bare `# noqa` comments
    that suppressed nothing.

    Codes of disabled rules are skipped (they could not have fired), as are other tools' codes in
    `# noqa`. An unknown code is reported in CUDA comments (only nki-assist reads them) and, in `# noqa`,
    when it is shaped like an nki-assist id (`NKI999`). A bare CUDA `// nki-assist: ignore` that
    suppressed nothing is NA100.
    """

    spec = get(UNUSED_RULE)
    out = []
    for sup in sups.values():
        if sup.bare:
            if not sup.used:
                if language == "cuda":
                    out.append(spec.finding("Unused suppression: no nki-assist finding on this line.", file=path,
                                            line=sup.line, column=sup.column,
                                            evidence={"unused": [], "unknown": [], "codes": [], "bare": True}))
                elif is_enabled(UNUSED_BARE_RULE):
                    out.append(get(UNUSED_BARE_RULE).finding(
                        "Unused bare `# noqa`: no nki-assist finding on this line; if no other linter needs it, "
                        "remove it, else name the codes it is for.", file=path, line=sup.line, column=sup.column,
                        evidence={"bare": True}))
            continue
        unused, unknown = [], []
        for code, rule in sup.rule_ids.items():
            if rule is None:
                if language == "cuda" or looks_like_ours(code):
                    unknown.append(code)
                continue
            if rule == UNUSED_RULE or rule in sup.used or not is_enabled(rule):
                continue
            unused.append(code)
        if not unused and not unknown:
            continue
        parts = []
        if unused:
            parts.append(f"{', '.join(unused)} did not fire on this line")
        if unknown:
            parts.append(f"{', '.join(unknown)} {'is' if len(unknown) == 1 else 'are'} not a known rule")
        out.append(spec.finding(
            "Unused suppression: " + "; ".join(parts) + ".",
            file=path, line=sup.line, column=sup.column,
            evidence={"unused": unused, "unknown": unknown, "codes": sup.codes},
        ))
    return out
