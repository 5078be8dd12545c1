"""The resume key of a task: a hash of every file its review reads, the options that change a review, and the
tool's version. A batch skips a task whose key is already in its results table (`--force` redoes it)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .. import __version__
from .manifest import Task

MAX_PACKAGE_FILES = 2000  # a package_root with more .py files than this is hashed by its first ones (sorted)


def _spec_files(spec_path: Path) -> list[Path]:
    """The files a review of this spec reads; when the spec does not load, the spec and its folder's .py files
    (the review will record the spec error, and fixing any of them changes the key)."""
    # deferred: the spec loader pulls in NumPy; discovery and --help do not need it
    from ..numerics.spec import SpecError, load_spec

    try:
        spec = load_spec(spec_path)
    except SpecError:
        return [spec_path, *sorted(spec_path.parent.glob("*.py"))]
    files = [spec_path, spec.nki_path, *sorted(spec.nki_path.parent.glob("*.py"))]
    files += [p for p in (spec.cuda_path, spec.reference_path) if p is not None]
    if spec.package_root is not None:
        files += sorted(spec.package_root.rglob("*.py"))[:MAX_PACKAGE_FILES]
    if spec.golden is not None:
        for rel in (spec.golden.inputs, spec.golden.outputs):
            if rel:
                files.append(spec.dir / rel)
        if spec.golden.dir:
            files += sorted(p for p in (spec.dir / spec.golden.dir).rglob("*") if p.is_file())
    return files


def task_key(task: Task, options: dict) -> str:
    """sha256 over the tool version, the review options and the contents of the files the review reads."""
    h = hashlib.sha256()
    h.update(json.dumps({"tool": __version__, "options": options}, sort_keys=True).encode())
    seen = set()
    for p in _spec_files(Path(task.spec)) + [Path(f) for f in task.extra_files]:
        r = p.resolve()
        if r in seen:
            continue
        seen.add(r)
        h.update(b"\0" + p.name.encode("utf-8", "replace") + b"\0")
        try:
            h.update(hashlib.sha256(r.read_bytes()).digest())
        except OSError as exc:
            h.update(f"unreadable: {exc.strerror}".encode())
    return h.hexdigest()[:32]
