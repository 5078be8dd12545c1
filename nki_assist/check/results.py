"""What a check run answers: one `FileResult` per file and the `CheckReport` of a run (counts, exit code)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..severity import Severity

if TYPE_CHECKING:  # the Finding model (pydantic) loads only where a text is checked (start-up time)
    from ..findings import Finding


@dataclass
class FileResult:
    path: str
    language: str | None  # "nki" | "cuda" | None (not a checkable file)
    status: str  # "checked" | "skipped" | "error"
    reason: str = ""  # why skipped / what failed
    findings: list[Finding] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cuda_facts: dict[str, Any] | None = None
    parsed: Any = None  # the front end's NkiFile / CudaFile, so callers (the LSP) need not parse again
    unchecked: bool = False  # skipped although it is a kernel file (too large, binary, not a regular file)
    crashed: list[str] = field(default_factory=list)  # checks that raised on this file ("NKI001 check_x")

    @property
    def incomplete(self) -> str | None:
        """Why this file was not (fully) checked, or None: an error, an unchecked skip, a crashed check."""
        if self.status == "error":
            return self.reason
        if self.unchecked:
            return self.reason
        if self.crashed:
            return f"check(s) crashed: {', '.join(self.crashed)}; their findings are missing"
        return None

    def status_json(self) -> dict[str, Any]:
        return {"path": self.path, "language": self.language, "status": self.status,
                "reason": self.reason or None, "findings": len(self.findings),
                "suppressed": len(self.suppressed), "incomplete": self.incomplete}

    def to_entry(self) -> dict[str, Any]:
        """The JSON form the cache stores and pool workers return (everything but `parsed`)."""
        # deferred: the cache module is light (no pydantic)
        from .cache import ENTRY_VERSION

        return {"v": ENTRY_VERSION, "path": self.path, "language": self.language, "status": self.status,
                "reason": self.reason, "findings": [f.to_json() for f in self.findings],
                "suppressed": [f.to_json() for f in self.suppressed], "notes": list(self.notes),
                "cuda_facts": self.cuda_facts, "unchecked": self.unchecked, "crashed": list(self.crashed)}

    @classmethod
    def from_entry(cls, entry: dict[str, Any], lazy: bool = True) -> "FileResult":
        """A result from its JSON form; findings are `LazyFinding`s (no pydantic) unless `lazy` is False."""
        if lazy:
            # deferred: the cache module is light (no pydantic)
            from .cache import LazyFinding as make
        else:
            # deferred: pydantic only when the caller wants real Findings
            from ..findings import Finding

            make = Finding.model_validate
        return cls(entry["path"], entry["language"], entry["status"], entry.get("reason", ""),
                   findings=[make(f) for f in entry["findings"]],
                   suppressed=[make(f) for f in entry["suppressed"]], notes=list(entry["notes"]),
                   cuda_facts=entry.get("cuda_facts"), unchecked=bool(entry.get("unchecked")),
                   crashed=list(entry.get("crashed") or ()))


@dataclass
class CheckReport:
    findings: list[Finding] = field(default_factory=list)  # sorted by file, line, column, rule
    files_checked: int = 0
    files_skipped: int = 0
    notes: list[str] = field(default_factory=list)
    cuda_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # unreadable files, missing paths
    incomplete: list[str] = field(default_factory=list)  # "path: why" for files not (fully) checked
    files: list[FileResult] = field(default_factory=list)
    suppressed: list[Finding] = field(default_factory=list)
    target: str = "trn2"
    nki_versions: list[dict] = field(default_factory=list)  # the NKI versions files were held to (check/versioned.py)

    def add(self, result: FileResult) -> None:
        self.files.append(result)
        self.notes.extend(result.notes)
        if result.status == "checked":
            self.files_checked += 1
        elif result.status == "skipped":
            self.files_skipped += 1
        else:
            self.errors.append(f"{result.path}: {result.reason}")
        why = result.incomplete
        if why:
            self.incomplete.append(f"{result.path}: {why}")
        self.findings.extend(result.findings)
        self.suppressed.extend(result.suppressed)
        if result.cuda_facts is not None:
            self.cuda_facts[result.path] = result.cuda_facts

    def finish(self) -> "CheckReport":
        """Sort the findings by place and number them F1..Fn."""
        self.findings.sort(key=lambda f: (f.file or "", f.line or 0, f.column or 0, f.rule))
        self.findings = [f.model_copy(update={"id": f"F{i}"}) for i, f in enumerate(self.findings, 1)]
        return self

    def counts_by_severity(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Severity}
        for f in self.findings:
            counts[f.severity.value] += 1
        return counts

    def counts_by_rule(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for f in self.findings:
            counts[f.rule] = counts.get(f.rule, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def summary(self) -> dict[str, Any]:
        return {"target": self.target, "files_checked": self.files_checked,
                "files_skipped": self.files_skipped, "findings": len(self.findings),
                "by_severity": self.counts_by_severity(), "by_rule": self.counts_by_rule(),
                "suppressed": len(self.suppressed), "notes": len(self.notes), "errors": len(self.errors),
                "incomplete": len(self.incomplete)}
