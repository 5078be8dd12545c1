"""Version-dependent findings held to what is known about the target NKI version.

A finding is version-dependent when its evidence names the `nki_version` it was judged at (the API
table's rules, the dialect and target gates). Two cases temper them:
- the version was guessed (no flag, config, pin or installed `nki`: `VersionChoice.guessed`): such a
  finding is at most a warning, and its message names the version assumed and how to set it;
- the pin admits a range (`nki>=0.3,<0.5`): the rules run again at the newest admitted version, and a
  finding that holds at only one end is at most a warning that says at which version it holds.
`--fix` is tempered in check/autofix (version_safety): a fix that needs a newer NKI than the oldest the
project admits becomes unsafe, with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from ..api.version import VersionChoice, resolve_nki_version

if TYPE_CHECKING:  # the Finding model (pydantic) loads only where a text is checked
    from ..findings import Finding

Key = tuple[str, int | None, int | None, int | None, int | None]


def choice_for(path: str, explicit: str | None) -> VersionChoice:
    """The target version of one file: the explicit setting, else its project's pins, else a guess."""
    return resolve_nki_version(explicit, path)


def version_dependent(f: Finding) -> bool:
    return isinstance(f.evidence, dict) and "nki_version" in f.evidence


def holds_from(f: Finding, oldest: str) -> bool:
    """The finding holds at every version from `oldest` on: what it reports was removed at or before it
    (`mask=`, removed in 0.2, is an error whatever the newer version)."""
    from ..api.table import vkey  # local: the table loads only where findings are settled

    removed = f.evidence.get("removed_in") if isinstance(f.evidence, dict) else None
    return isinstance(removed, str) and bool(removed) and vkey(removed) <= vkey(oldest)


def _key(f: Finding) -> Key:
    return (f.rule, f.line, f.column, f.end_line, f.end_column)


def _at_most_warning(f: Finding, suffix: str, **evidence) -> Finding:
    from ..findings import Severity  # local: pydantic model module

    sev = Severity.WARNING if f.severity == Severity.ERROR else f.severity
    ev = dict(f.evidence) if isinstance(f.evidence, dict) else {}
    ev.update(evidence)
    msg = f.message.rstrip()
    return f.model_copy(update={"severity": sev, "message": f"{msg} {suffix}", "evidence": ev})


def _deprecation_note(f: Finding) -> Finding:
    """A deprecation (the API still works, `deprecated_in` a release) judged at a guessed version: the code may
    target a release before it, so it is a note about upgrading, not a defect a reviewer would ask to change."""
    from ..findings import Severity  # local: pydantic model module

    if isinstance(f.evidence, dict) and f.evidence.get("deprecated_in") and f.severity == Severity.WARNING:
        return f.model_copy(update={"severity": Severity.INFO})
    return f


def settle(findings: list[Finding], choice: VersionChoice,
           at_other_end: Callable[[str], list[Finding]] | None = None) -> list[Finding]:
    """The findings with version-dependent ones tempered by what is known about the version (module doc).
    `at_other_end(version)` runs the rules at another version (only called for a range pin)."""
    if choice.guessed:
        suffix = (f"[NKI {choice.version} assumed: no version was given; set --nki-version, "
                  "`[tool.nki-assist] nki-version` or pin `nki`]")
        oldest = choice.oldest_admitted()
        return [_deprecation_note(_at_most_warning(f, suffix, nki_version_assumed=True))
                if version_dependent(f) and not holds_from(f, oldest) else f for f in findings]
    other = choice.other_end()
    if other is None or at_other_end is None:
        return findings
    mine = {_key(f) for f in findings if version_dependent(f)}
    theirs = [f for f in at_other_end(other) if version_dependent(f)]
    their_keys = {_key(f) for f in theirs}
    pin = f"nki{choice.spec}"
    out = []
    for f in findings:
        if version_dependent(f) and _key(f) not in their_keys:
            f = _at_most_warning(f, f"[holds at NKI {choice.version}, not at {other}; {pin} admits both]",
                                 holds_at=[choice.version], not_at=[other])
        out.append(f)
    for f in theirs:
        if _key(f) not in mine:
            out.append(_at_most_warning(f, f"[holds at NKI {other}, not at {choice.version}; {pin} admits both]",
                                        holds_at=[other], not_at=[choice.version]))
    return out


def record_versions(report, explicit: str | None) -> None:
    """The NKI versions the run's checked NKI files were held to, one entry per distinct choice, on
    `report.nki_versions` (json `nki_version`, SARIF run property, the text run's one stderr line)."""
    from ..api.version import describe  # deferred: only a run's summary describes the choices

    seen: dict[str, dict] = {}
    for r in report.files:
        if r.language != "nki" or r.status != "checked":
            continue
        c = choice_for(r.path, explicit)
        k = f"{c.key()}|{c.source}"
        if k not in seen:
            seen[k] = {"version": c.version, "source": c.source, "assumed": c.guessed,
                       "oldest_admitted": c.oldest_admitted(), "newest_admitted": c.other_end() or c.version,
                       "files": 0, "message": describe(c)}
        seen[k]["files"] += 1
    report.nki_versions = list(seen.values())
