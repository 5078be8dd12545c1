"""What a batch reviews: port specs named on the command line, found in folders, or listed in a manifest.

A manifest is JSONL (one `{"id": ..., "spec": "path/port.toml"}` per line) or TOML (`ports = ["a/port.toml",
{id = "b", spec = "b/port.toml"}]`); paths in it are relative to the manifest. A TOML file with a `[port]`
table is a port spec, not a manifest.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".pytest_cache"}
MAX_MANIFEST_BYTES = 50_000_000


class ManifestError(ValueError):
    """A bad batch input (names the file and the problem): a usage error."""


@dataclass
class Task:
    """One submission to review."""

    id: str
    spec: str  # the port.toml the review reads (a generated one in template mode)
    submission: str | None = None  # template mode: the submitted file
    rubric: str | None = None  # template mode: the template's rubric, else the batch's --rubric
    extra_files: list[str] = field(default_factory=list)  # more inputs the review reads (template, ...)


def slug(text: str) -> str:
    """A file-name-safe id ("cases/a b" -> "cases--a_b")."""
    text = text.strip("/").replace("/", "--")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "port"


def is_manifest(path: Path) -> bool:
    if path.suffix == ".jsonl":
        return True
    if path.suffix != ".toml":
        return False
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False  # the review reports the spec's own problem
    return "ports" in data and "port" not in data


def _unique(tasks: list[Task]) -> list[Task]:
    seen: dict[str, int] = {}
    for t in tasks:
        n = seen.get(t.id, 0)
        seen[t.id] = n + 1
        if n:
            t.id = f"{t.id}-{n + 1}"
    return tasks


def _from_manifest(path: Path) -> list[Task]:
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise ManifestError(f"{path}: larger than {MAX_MANIFEST_BYTES:,} bytes")
    base = path.parent
    entries: list[tuple[str | None, str, str]] = []
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ManifestError(f"{path}:{n}: invalid JSON: {exc.msg}") from None
            if isinstance(obj, str):
                obj = {"spec": obj}
            if not isinstance(obj, dict) or not isinstance(obj.get("spec"), str):
                raise ManifestError(f'{path}:{n}: expected {{"spec": "path/port.toml", "id": "..."}}')
            entries.append((obj.get("id"), obj["spec"], f"{path}:{n}"))
    else:
        try:
            ports = tomllib.loads(text)["ports"]
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(f"{path}: invalid TOML: {exc}") from None
        if not isinstance(ports, list):
            raise ManifestError(f"{path}: ports: expected a list")
        for i, item in enumerate(ports):
            if isinstance(item, str):
                item = {"spec": item}
            if not isinstance(item, dict) or not isinstance(item.get("spec"), str):
                raise ManifestError(f"{path}: ports[{i}]: expected a path or {{id = ..., spec = ...}}")
            entries.append((item.get("id"), item["spec"], f"{path}: ports[{i}]"))
    tasks = []
    for ident, spec, where in entries:
        p = base / spec
        if not p.is_file():
            raise ManifestError(f"{where}: {p}: " + ("not a regular file" if p.exists() else "no such file"))
        tasks.append(Task(id=slug(str(ident)) if ident else slug(p.parent.name), spec=str(p),
                          extra_files=[str(path)]))
    return tasks


def _walk(folder: Path, skip: Path | None) -> list[Path]:
    found = []
    for p in sorted(folder.rglob("port.toml")):
        rel = p.relative_to(folder).parts
        if any(part in SKIP_DIRS or part.startswith(".") for part in rel[:-1]):
            continue
        if skip is not None and p.resolve().is_relative_to(skip):
            continue  # the batch folder's own generated specs
        found.append(p)
    return found


def discover(paths: list[str], out_dir: str | None = None) -> list[Task]:
    """Tasks for PATH... (port specs, folders searched for port.toml, manifests), in the order given."""
    skip = Path(out_dir).resolve() if out_dir else None
    tasks: list[Task] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            specs = _walk(p, skip)
            if not specs:
                raise ManifestError(f"{raw}: no port.toml under this folder")
            tasks += [Task(id=slug(str(s.parent.relative_to(p)) if s.parent != p else p.resolve().name),
                           spec=str(s)) for s in specs]
        elif p.is_file():
            if is_manifest(p):
                tasks += _from_manifest(p)
            else:
                tasks.append(Task(id=slug(p.parent.resolve().name), spec=str(p)))
        else:
            raise ManifestError(f"{raw}: no such file or folder")
    return _unique(tasks)
