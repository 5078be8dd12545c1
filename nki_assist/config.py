"""`[tool.nki-assist]` configuration from the nearest pyproject.toml that has the table.

Shared by `nki-assist check` and the language server. Loading never raises: problems (bad TOML,
unknown keys, bad values) are collected in `Config.problems`; the CLI turns them into a usage error,
the language server into a notification.

```toml
[tool.nki-assist]
target = "trn2"                 # trn1 | trn2 | trn3
select = ["NKI1", "CUDA"]       # ids, id prefixes or kebab names; default: all rules
ignore = ["NKI107"]
fail-on = "warning"             # error | warning | info | never
max-file-bytes = 5_000_000      # larger files are skipped with a note
exclude = ["generated/**"]      # gitwildmatch globs, relative to the pyproject directory
extend-exclude = ["build/"]     # added to exclude (the --extend-exclude flag adds more)
respect-gitignore = true        # walks skip what .gitignore files ignore
cache-dir = ".nki_assist_cache" # relative to the pyproject directory
nki-version = "0.3"             # target NKI version (or SDK release "2.29"); default: pins, installed nki, newest

[tool.nki-assist.per-file-ignores]
"tests/**" = ["NKI104"]

[tool.nki-assist.severity]
NKI104 = "error"
```
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .api.hardware import TARGETS

DEFAULT_MAX_FILE_BYTES = 5_000_000
FAIL_ON_CHOICES = ("error", "warning", "info", "never")
SEVERITIES = ("error", "warning", "info")
KNOWN_KEYS = {"target", "select", "ignore", "per-file-ignores", "fail-on", "severity", "max-file-bytes",
              "exclude", "extend-exclude", "respect-gitignore", "cache-dir", "nki-version"}


@dataclass
class Config:
    target: str | None = None
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    fail_on: str | None = None
    severity: dict[str, str] = field(default_factory=dict)  # rule id or name -> error|warning|info
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    exclude: list[str] = field(default_factory=list)
    extend_exclude: list[str] = field(default_factory=list)
    respect_gitignore: bool = True
    cache_dir: str | None = None  # as written; relative to `root`
    nki_version: str | None = None  # normalised ("0.3"); None: inferred (api/version.py)
    path: Path | None = None  # the pyproject.toml read, None when no config was found
    problems: list[str] = field(default_factory=list)

    @property
    def root(self) -> Path | None:
        """Directory that per-file-ignores and exclude globs are relative to."""
        return self.path.parent if self.path else None


def find_pyproject(start: Path) -> tuple[Path, dict] | None:
    """Nearest pyproject.toml at or above `start` with a [tool.nki-assist] table, and that table.

    A pyproject.toml without the table does not stop the search, so a nested package without its own
    settings inherits the repository's. An unreadable or invalid file is returned with an empty
    table and a marker key so the caller can report it.
    """
    start = Path(start).absolute()
    here = start if start.is_dir() else start.parent
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        try:
            if not candidate.is_file():
                continue
        except OSError:  # a folder that cannot be searched (PermissionError): no settings seen there
            continue
        try:
            data = tomllib.loads(candidate.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            if "nki-assist" in _raw(candidate):
                return candidate, {"__error__": f"{candidate}: cannot read: {exc}"}
            continue
        table = data.get("tool", {}).get("nki-assist")
        if table is not None:
            return candidate, table
    return None


def _raw(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _str_list(value, key: str, problems: list[str]) -> list[str] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"`{key}` must be a list of strings, got {value!r}")
        return None
    return [v.strip() for v in value if v.strip()]


def parse_table(table: dict, path: Path | None = None) -> Config:
    """Config from a `[tool.nki-assist]` table (already parsed TOML)."""

    cfg = Config(path=path)
    where = f"{path} [tool.nki-assist]" if path else "[tool.nki-assist]"
    problems: list[str] = []
    if "__error__" in table:
        cfg.problems.append(table["__error__"])
        return cfg
    for key in sorted(set(table) - KNOWN_KEYS):
        problems.append(f"unknown key `{key}` (known: {', '.join(sorted(KNOWN_KEYS))})")
    if "target" in table:
        if table["target"] in TARGETS:
            cfg.target = table["target"]
        else:
            problems.append(f"`target` must be one of {', '.join(TARGETS)}, got {table['target']!r}")
    if "select" in table:
        cfg.select = _str_list(table["select"], "select", problems)
    if "ignore" in table:
        cfg.ignore = _str_list(table["ignore"], "ignore", problems) or []
    if "exclude" in table:
        cfg.exclude = _str_list(table["exclude"], "exclude", problems) or []
    if "extend-exclude" in table:
        cfg.extend_exclude = _str_list(table["extend-exclude"], "extend-exclude", problems) or []
    if "respect-gitignore" in table:
        if isinstance(table["respect-gitignore"], bool):
            cfg.respect_gitignore = table["respect-gitignore"]
        else:
            problems.append(f"`respect-gitignore` must be true or false, got {table['respect-gitignore']!r}")
    if "cache-dir" in table:
        if isinstance(table["cache-dir"], str) and table["cache-dir"].strip():
            cfg.cache_dir = table["cache-dir"].strip()
        else:
            problems.append(f"`cache-dir` must be a folder name, got {table['cache-dir']!r}")
    if "fail-on" in table:
        if table["fail-on"] in FAIL_ON_CHOICES:
            cfg.fail_on = table["fail-on"]
        else:
            problems.append(f"`fail-on` must be one of {', '.join(FAIL_ON_CHOICES)}, got {table['fail-on']!r}")
    if "max-file-bytes" in table:
        value = table["max-file-bytes"]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            cfg.max_file_bytes = value
        else:
            problems.append(f"`max-file-bytes` must be a positive integer, got {value!r}")
    if "nki-version" in table:
        from .api.table import normalize_version  # local: the table loads only when the key is set

        value = table["nki-version"]
        cfg.nki_version = normalize_version(str(value)) if isinstance(value, (str, int, float)) else None
        if cfg.nki_version is None:
            problems.append(f"`nki-version` must name an NKI version (\"0.3\") or SDK release (\"2.29\"), got {value!r}")
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        problems.append("`per-file-ignores` must be a table of glob = [rule ids]")
    else:
        for glob, rules in pfi.items():
            ids = _str_list(rules, f"per-file-ignores.{glob}", problems)
            if ids is not None:
                cfg.per_file_ignores[glob] = ids
    sev = table.get("severity", {})
    if not isinstance(sev, dict):
        problems.append("`severity` must be a table of RULE = \"error\"|\"warning\"|\"info\"")
    else:
        for rule, level in sev.items():
            if level in SEVERITIES:
                cfg.severity[rule] = level
            else:
                problems.append(f"`severity.{rule}` must be one of {', '.join(SEVERITIES)}, got {level!r}")
    cfg.problems = [f"{where}: {p}" for p in problems]
    return cfg


def load_config(start: Path) -> Config:
    """Configuration for files at or below `start` (a file or directory); defaults when none is found."""
    found = find_pyproject(Path(start))
    if found is None:
        return Config()
    path, table = found
    return parse_table(table, path)
