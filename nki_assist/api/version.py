"""The target NKI version: which release's facts a check holds the code to (like ruff's target-version).

Resolution order (`resolve_nki_version`): an explicit value (`--nki-version`, then `[tool.nki-assist]
nki-version`), then the project's pins (the nearest pyproject.toml / requirements*.txt / constraints*.txt
at or above the file that pins `nki`), then the installed real `nki` package, then `DEFAULT_NKI_VERSION`
(the newest release the API table covers). Values are NKI versions ("0.3", "0.3.0") or Neuron SDK
releases ("2.29", "sdk-2.29"), which the release notes map to the NKI version they ship.

A choice also carries the range the pin admits (`oldest`, `newest`: `nki>=0.3,<0.5` admits 0.3-0.4) and
whether it was guessed (no flag, config, pin or installed package named a version: `guessed`). Checks hold
the code to `version` (the oldest admitted); check/versioned.py re-checks the other end of a range and
keeps version-dependent errors only where they hold for every admitted version, or where nothing was guessed.

A `neuronx-cc` pin alone does not give the version: the compiler's version numbers are not the SDK's,
and the table has no mapping for them (the choice's `note` says so).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from . import table

DEFAULT_NKI_VERSION = table.latest()
_REQ = re.compile(r"^\s*(nki|neuronx-cc|neuronx_cc)\s*(?:\[[^\]]*\])?\s*(===|==|~=|>=|>)\s*v?([0-9][0-9.*]*)",
                  re.I | re.M)
# every specifier of an `nki` requirement line: nki>=0.3,<0.5
_SPECS = re.compile(r"^\s*nki\s*(?:\[[^\]]*\])?\s*((?:(?:===|==|~=|>=|<=|!=|>|<)\s*v?[0-9][0-9a-z.*+!-]*\s*,?\s*)+)",
                    re.I | re.M)
_SPEC = re.compile(r"(===|==|~=|>=|<=|!=|>|<)\s*v?([0-9][0-9a-z.*+!-]*)", re.I)
_REQ_FILES = ("requirements*.txt", "constraints*.txt")


@dataclass(frozen=True)
class VersionChoice:
    version: str  # "0.3"
    source: str  # "--nki-version" | "pyproject.toml nki-version" | "<file>: nki==0.3.0" | "installed nki" | "default"
    note: str = ""  # what was seen but not used (a neuronx-cc pin), when anything
    oldest: str | None = None  # the oldest table version the pin admits (None: not bounded by a known version)
    newest: str | None = None  # the newest table version the pin admits (None: open above)
    spec: str = ""  # the pin's specifiers as written (">=0.3,<0.5"), when a pin gave the range

    @property
    def guessed(self) -> bool:
        """No flag, config, pin or installed package named the version: findings that depend on it are
        at most warnings (check/versioned.py)."""
        return self.source == "default"

    def oldest_admitted(self) -> str:
        """The oldest NKI version the project may run on: the pin's lower bound, else the oldest the table
        knows (a guessed version, or a pin like `nki>=0.0.0a0`, admits every release)."""
        if self.oldest:
            return self.oldest
        if self.source in ("default",) or self.spec:
            return table.versions()[0]
        return self.version

    def other_end(self) -> str | None:
        """The newest admitted version when the pin admits more than `version` (a range), else None."""
        if not self.spec or self.guessed:
            return None
        hi = self.newest or table.latest()
        return hi if table.vkey(hi) > table.vkey(self.version) else None

    def key(self) -> str:
        """What the findings depend on (a cache key part)."""
        return f"{self.version}|{self.oldest_admitted()}|{self.other_end() or ''}|{int(self.guessed)}"

    def how_to_set(self) -> str:
        return "set it with --nki-version, `[tool.nki-assist] nki-version` in pyproject.toml, or pin `nki` " \
               "in the project's requirements"


def target_version(target) -> str:
    """The NKI version a `hardware.Target` carries (its `nki_version`), else the default."""
    return getattr(target, "nki_version", None) or DEFAULT_NKI_VERSION


def _pins_in(text: str) -> list[tuple[str, str]]:
    return [(m.group(1).lower().replace("_", "-"), m.group(3)) for m in _REQ.finditer(text)]


def _known(text: str, below: bool = False) -> str | None:
    """The table version a specifier's version names; `below`: for an exclusive upper bound (<0.5), the
    newest table version under it."""
    v = table.normalize_version(text.replace("*", "0"))
    if below:
        under = [x for x in table.versions() if table.vkey(x) < table.vkey(v or text)]
        return under[-1] if under else None
    if v is None and table.vkey(text) < table.vkey(table.versions()[0]):
        return None  # below every release the table knows (nki>=0.0.0a0): not a bound
    return v


def pin_range(spec: str) -> tuple[str | None, str | None]:
    """(oldest, newest) table versions an `nki` specifier list admits: ">=0.3,<0.5" -> ("0.3", "0.4"),
    "==0.3.0" -> ("0.3", "0.3"), "~=0.3.0" -> ("0.3", "0.3"), ">=0.0.0a0" -> (None, None)."""
    lo = hi = None
    for op, ver in _SPEC.findall(spec):
        if op == "!=":
            continue
        parts = re.findall(r"\d+", ver)
        if op in ("==", "==="):
            lo = hi = _known(ver)
        elif op == "~=":
            lo = _known(ver)
            if len(parts) >= 3:
                hi = lo
        elif op in (">=", ">"):
            lo = _known(ver)
        elif op == "<":
            exact_minor = len(parts) >= 3 and int(parts[2]) > 0
            hi = _known(ver) if exact_minor else _known(ver, below=True)
        elif op == "<=":
            hi = _known(ver)
    return lo, hi


def _pyproject_requirements(path: Path) -> str:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    reqs: list[str] = list(data.get("project", {}).get("dependencies", []) or [])
    for group in (data.get("project", {}).get("optional-dependencies", {}) or {}).values():
        reqs.extend(group or [])
    for group in (data.get("dependency-groups", {}) or {}).values():
        reqs.extend(r for r in group or [] if isinstance(r, str))
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}) or {}
    for name, spec in poetry.items():
        ver = spec.get("version") if isinstance(spec, dict) else spec
        if isinstance(ver, str):
            reqs.append(f"{name}{ver if ver[:1] in '=<>~' else '==' + ver}")
    return "\n".join(r for r in reqs if isinstance(r, str))


@lru_cache(maxsize=256)
def _infer_in(directory: str) -> VersionChoice | None:
    here = Path(directory)
    note = ""
    wide = ""
    for d in (here, *here.parents):
        files = [d / "pyproject.toml"] + [p for pat in _REQ_FILES for p in sorted(d.glob(pat))]
        for f in files:
            if not f.is_file():
                continue
            text = _pyproject_requirements(f) if f.name == "pyproject.toml" else _read(f)
            for m in _SPECS.finditer(text):
                spec = re.sub(r"\s+", "", m.group(1)).rstrip(",")
                lo, hi = pin_range(spec)
                v = lo or hi
                if v:
                    return VersionChoice(v, f"{f}: nki{spec}", oldest=lo, newest=hi, spec=spec)
                if not note:  # a pin that admits every release (nki>=0.0.0a0): the version stays a guess
                    note = f"{f} pins nki{spec}, which admits every NKI release; set nki-version"
                    wide = spec
            for pkg, ver in _pins_in(text):
                if pkg == "nki":
                    continue
                elif not note:
                    note = f"{f} pins neuronx-cc {ver}, whose version does not name the NKI release; " \
                           "set nki-version"
        if (d / ".git").exists():
            break
    if note:
        return VersionChoice("", "", note, spec=wide)
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def infer_nki_version(start: Path | str) -> VersionChoice | None:
    """The version the project's pins (at or above `start`, a file or directory) or the installed `nki`
    name; None when neither does."""
    p = Path(start).absolute()
    found = _infer_in(str(p if p.is_dir() else p.parent))
    if found is not None and found.version:
        return found
    inst = table.installed_version()
    if inst:
        return VersionChoice(inst, "installed nki", found.note if found else "")
    return found


def resolve_nki_version(explicit: str | None = None, start: Path | str | None = None,
                        explicit_source: str = "nki-version") -> VersionChoice:
    """The target NKI version: `explicit` (raises ValueError when it names no known version), else the
    pins / installed package found from `start`, else the default."""
    if explicit:
        v = table.normalize_version(explicit)
        if v is None:
            raise ValueError(f"unknown NKI version {explicit!r}; give an NKI version "
                             f"({table.legacy_version()}, {', '.join(table.versions())}) or an SDK release "
                             f"({', '.join(table.sdk_to_nki())})")
        return VersionChoice(v, explicit_source)
    found = infer_nki_version(start) if start is not None else None
    if found is not None and found.version:
        return found
    return VersionChoice(DEFAULT_NKI_VERSION, "default", found.note if found else "",
                         spec=found.spec if found else "")


def describe(choice: VersionChoice) -> str:
    """One line for the run's output: the version checked and where it came from."""
    if choice.guessed:
        why = f" ({choice.note})" if choice.note else ""
        return (f"nki-assist: no NKI version found (no --nki-version, config, pin or installed nki){why}; "
                f"assuming NKI {choice.version}: version-dependent findings are warnings at most; "
                + choice.how_to_set())
    rng = f", admitting {choice.oldest_admitted()}-{choice.other_end()}" if choice.other_end() else ""
    return f"nki-assist: NKI {choice.version} ({choice.source}{rng})"
