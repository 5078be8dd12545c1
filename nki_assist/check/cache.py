"""The persistent cache of `nki-assist check` (ruff's `.ruff_cache` is the model).

One JSON entry per checked file, named by a hash of the file's bytes and the path it is reported under,
in a folder named by a hash of everything else a result depends on: the whole resolved `CheckOptions`
(every field, so a setting added later is part of the key without anyone remembering it), the tool
version and a fingerprint of the installed package's files (so a changed rule never serves old
findings). Entries are written to a temporary file and renamed into place, so concurrent runs and a
killed run never leave a torn entry; an unreadable entry is a miss.

An entry is trusted only as far as it checks out (issue 44): its first line is a digest of the rest keyed by
the entry's name (the file's bytes and path) and the code fingerprint, so an entry edited by hand, copied from
another file or left by another version is a miss; a file entry whose fields have the wrong types is a miss
too. (The digest is integrity, not a secret: whoever can write the cache and run this code can forge one.)

Cached findings come back as `LazyFinding`s: plain dicts that read like a `Finding` for what the CLI
prints (rule, place, severity, message, fix applicability) and become a real pydantic `Finding` only
when something else is asked of them, so a fully cached run never imports pydantic (start-up time).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from ..infra.atomic import write_atomic
from ..severity import Severity

ENTRY_VERSION = 5  # 2: entries record the project and the file's slice of it; 3: a module's index has `launches`;
# 4: a digest line before the JSON; 5: repeated findings of one cause are grouped (findings.group_repeats)
DEFAULT_CACHE_DIR = ".nki_assist_cache"
CACHE_DIR_ENV = "NKI_ASSIST_CACHE_DIR"
_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def code_fingerprint() -> str:
    """Tool version + the size and mtime of every file of the installed package (~1 ms): an edited rule
    in a development checkout invalidates the cache as a version bump does."""
    # deferred: the package's __init__ is already loaded; a module-level import would be a cycle
    from .. import __version__

    h = hashlib.blake2b(__version__.encode(), digest_size=16)
    for dirpath, dirnames, filenames in os.walk(_PACKAGE_DIR):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            h.update(f"{os.path.relpath(os.path.join(dirpath, name), _PACKAGE_DIR)}\0{st.st_size}\0"
                     f"{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def settings_digest(options: Any) -> str:
    """A hash of every field of the resolved options (a dataclass), the tool version and the code."""
    fields = dataclasses.asdict(options)
    text = json.dumps(fields, sort_keys=True, default=repr)
    return hashlib.blake2b(f"{ENTRY_VERSION}\0{code_fingerprint()}\0{text}".encode(), digest_size=12).hexdigest()


def default_cache_dir(root: str | None) -> Path:
    """`NKI_ASSIST_CACHE_DIR`, else `.nki_assist_cache` in the project root (the pyproject.toml's folder)
    or, without a config, the working directory."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    return Path(root or ".") / DEFAULT_CACHE_DIR


class CheckCache:
    """Entries for one set of options. `get`/`put` never raise: a cache that cannot be read or written
    only costs speed (`problem` says why writing stopped)."""

    def __init__(self, directory: str | os.PathLike, options: Any):
        self.top = Path(directory)
        self.folder = self.top / settings_digest(options)
        self.problem: str | None = None
        self.hits = 0
        self.misses = 0
        self._made = False

    @staticmethod
    def key(path: str, data: bytes) -> str:
        h = hashlib.blake2b(data, digest_size=20)
        h.update(b"\0" + path.encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def get(self, key: str) -> dict | None:
        """A file's entry (`FileResult.to_entry`'s form), or None when absent, damaged or of the wrong shape."""
        entry = self.read(key)
        if entry is not None and not valid_file_entry(entry):
            entry = None
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def read(self, key: str) -> dict | None:
        """The entry under `key`, or None; not counted as a hit or miss (the project model's index entries)."""
        try:
            with open(self.folder / f"{key}.json", "rb") as fh:
                head, _, body = fh.read().partition(b"\n")
            if head != seal(key, body):
                return None
            entry = json.loads(body)
        except (OSError, ValueError, RecursionError):
            return None
        if not isinstance(entry, dict) or entry.get("v") != ENTRY_VERSION:
            return None
        return entry

    def reject(self) -> None:
        """The entry `get` found is out of date after all (checked in another project): count a miss."""
        self.hits -= 1
        self.misses += 1

    def put(self, key: str, entry: dict) -> None:
        if self.problem is not None:
            return
        try:
            self._make()
            # atomic: readers see the old entry or the new
            body = json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            write_atomic(self.folder / f"{key}.json", seal(key, body) + b"\n" + body, fsync=False)
        except (OSError, TypeError, ValueError) as exc:
            self.problem = f"cache not written to {self.top}: {getattr(exc, 'strerror', None) or exc}"

    def _make(self) -> None:
        if self._made:
            return
        new_top = not self.top.exists()
        self.folder.mkdir(parents=True, exist_ok=True)
        if new_top or not (self.top / "CACHEDIR.TAG").exists():
            # like .ruff_cache: never committed, skipped by backup tools
            (self.top / ".gitignore").write_text("# Automatically created by nki-assist.\n*\n", encoding="utf-8")
            (self.top / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# nki-assist check cache\n", encoding="utf-8")
        self._made = True


def seal(key: str, body: bytes) -> bytes:
    """The digest line of an entry: its body keyed by the entry's name and the code fingerprint."""
    mac = hashlib.blake2b(f"{key}\0{code_fingerprint()}".encode("utf-8", "surrogateescape"), digest_size=32).digest()
    return b"v%d:" % ENTRY_VERSION + hashlib.blake2b(body, key=mac, digest_size=20).hexdigest().encode()


_SEVERITIES = frozenset(s.value for s in Severity)
_INT_FIELDS = ("line", "end_line", "column", "end_column")


def _valid_finding(f: Any) -> bool:
    return (isinstance(f, dict) and isinstance(f.get("rule"), str) and isinstance(f.get("message"), str)
            and f.get("severity") in _SEVERITIES and isinstance(f.get("file"), (str, type(None)))
            and all(f.get(k) is None or (type(f[k]) is int and f[k] >= 1) for k in _INT_FIELDS))


def valid_file_entry(entry: dict) -> bool:
    """`FileResult.from_entry` can read it and every finding reads like a Finding (types, not values)."""
    def strings(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    return (isinstance(entry.get("path"), str) and isinstance(entry.get("status"), str)
            and isinstance(entry.get("language"), (str, type(None))) and isinstance(entry.get("reason", ""), str)
            and isinstance(entry.get("findings"), list) and isinstance(entry.get("suppressed"), list)
            and all(_valid_finding(f) for f in entry["findings"] + entry["suppressed"])
            and strings(entry.get("notes")) and strings(entry.get("crashed") or [])
            and isinstance(entry.get("cuda_facts"), (dict, type(None))))


# --- findings read back from the cache --------------------------------------------------------

_FAST = ("id", "rule", "name", "category", "criterion", "source", "file", "line", "end_line", "column",
         "end_column", "message", "fix", "est_speedup", "confidence", "evidence")


class LazyFinding:
    """A finding's JSON form that reads like a `nki_assist.findings.Finding`.

    The attributes `check` prints are read from the dict; any other (`autofix`, `related`, `model_dump`,
    ...) builds the real Finding once and answers from it."""

    __slots__ = ("_data", "_real")

    def __init__(self, data: dict):
        self._data = data
        self._real = None

    def __getattr__(self, name: str):
        if name in _FAST:
            return self._data.get(name)
        return getattr(self.real(), name)

    @property
    def severity(self) -> Severity:
        return Severity(self._data["severity"])

    @property
    def fix_applicability(self) -> str | None:
        fix = self._data.get("autofix")
        return fix.get("applicability") if isinstance(fix, dict) else None

    def real(self):
        if self._real is None:
            # deferred: pydantic is imported only when a cached finding is asked for more than check prints
            from ..findings import Finding

            self._real = Finding.model_validate(self._data)
        return self._real

    def to_json(self) -> dict[str, Any]:
        return dict(self._data)

    def model_copy(self, update: dict[str, Any] | None = None) -> "LazyFinding":
        data = dict(self._data)
        for k, v in (update or {}).items():
            data[k] = v.value if isinstance(v, Severity) else v
        return LazyFinding(data)

    def __repr__(self) -> str:
        return f"LazyFinding({self._data.get('rule')} {self._data.get('file')}:{self._data.get('line')})"


def fix_applicability(finding: Any) -> str | None:
    """`safe`, `unsafe` or None for a Finding or a LazyFinding (without building the pydantic model)."""
    if isinstance(finding, LazyFinding):
        return finding.fix_applicability
    fix = getattr(finding, "autofix", None)
    return fix.applicability if fix is not None else None
