"""Template mode: one assignment spec applied to every submitted file.

`--template spec.toml --submissions 'subs/*/kernel.py'`: the template is a port spec whose `port.nki` is left
out (or is any placeholder); an optional `[grading]` table names the rubric (`rubric = "rubric.toml"`). For
each submitted file a port spec is written into the batch folder (specs/<id>/port.toml) with the paths
rebased, so the review reads exactly what a hand-written spec would. The submission's id is its folder's name
(the file name when two submissions share a folder).
"""

from __future__ import annotations

import glob
import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

from ..infra.atomic import write_atomic
from .manifest import ManifestError, Task, _unique, slug

PATH_KEYS = ("nki", "cuda", "package_root")
GOLDEN_KEYS = ("inputs", "outputs", "dir")
GRADING_KEYS = {"rubric"}


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a TOML basic string for everything json emits unescaped
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise ManifestError(f"template: cannot write a {type(v).__name__} value")


def dumps(data: dict[str, Any]) -> str:
    """TOML for a port spec's shape: top-level tables, arrays of tables, values and inline tables."""
    lines: list[str] = []
    for key, val in data.items():
        if isinstance(val, dict):
            lines.append(f"[{json.dumps(key)}]")
            lines += [f"{json.dumps(k)} = {_value(x)}" for k, x in val.items()]
        elif isinstance(val, list) and val and all(isinstance(x, dict) for x in val):
            for item in val:
                lines.append(f"[[{json.dumps(key)}]]")
                lines += [f"{json.dumps(k)} = {_value(x)}" for k, x in item.items()]
        else:
            lines.insert(0, f"{json.dumps(key)} = {_value(val)}")
        lines.append("")
    return "\n".join(lines)


def _rebase(rel: str, src_dir: Path, dst_dir: Path) -> str:
    return os.path.relpath((src_dir / rel).resolve(), dst_dir.resolve())


def load_template(path: str) -> tuple[dict[str, Any], str | None]:
    """The template's data (without [grading]) and its rubric path (resolved), or ManifestError."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: invalid TOML: {exc}") from None
    grading = data.pop("grading", {}) or {}
    unknown = set(grading) - GRADING_KEYS
    if unknown:
        raise ManifestError(f"{path}: grading: unknown key {sorted(unknown)[0]!r} (known: rubric)")
    if not isinstance(data.get("port"), dict):
        raise ManifestError(f"{path}: a template needs a [port] table (name, nki_kernel, reference, target)")
    rubric = grading.get("rubric")
    if rubric is not None:
        rubric = str(p.parent / rubric)
        if not Path(rubric).is_file():
            raise ManifestError(f"{path}: grading.rubric: no such file: {rubric}")
    return data, rubric


def submissions(pattern: str) -> list[Path]:
    found = sorted(Path(p) for p in glob.glob(pattern, recursive=True) if Path(p).is_file())
    if not found:
        raise ManifestError(f"--submissions {pattern!r}: no file matches")
    return found


def _submission_id(sub: Path, shared_folder: bool) -> str:
    return slug(f"{sub.parent.name}-{sub.stem}" if shared_folder else sub.parent.resolve().name)


def expand(template: str, pattern: str, out_dir: str) -> list[Task]:
    """One task per submitted file, each with its generated port spec under OUT_DIR/specs/<id>/."""
    data, rubric = load_template(template)
    tdir = Path(template).parent
    subs = submissions(pattern)
    folders = [s.parent.resolve() for s in subs]
    tasks = []
    for sub in subs:
        shared = folders.count(sub.parent.resolve()) > 1
        tasks.append(Task(id=_submission_id(sub, shared), spec="", submission=str(sub), rubric=rubric,
                          extra_files=[template] + ([rubric] if rubric else [])))
    tasks = _unique(tasks)
    for task in tasks:
        dst = Path(out_dir) / "specs" / task.id
        dst.mkdir(parents=True, exist_ok=True)
        spec = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
        port = spec["port"]
        port.setdefault("name", task.id)
        for key in PATH_KEYS:
            if isinstance(port.get(key), str) and key != "nki":
                port[key] = _rebase(port[key], tdir, dst)
        port["nki"] = os.path.relpath(Path(task.submission).resolve(), dst.resolve())
        if isinstance(port.get("reference"), str) and ":" in port["reference"]:
            file, fn = port["reference"].split(":", 1)
            port["reference"] = f"{_rebase(file, tdir, dst)}:{fn}"
        if isinstance(spec.get("golden"), dict):
            for key in GOLDEN_KEYS:
                if isinstance(spec["golden"].get(key), str):
                    spec["golden"][key] = _rebase(spec["golden"][key], tdir, dst)
        path = dst / "port.toml"
        write_atomic(path, "# generated by nki-assist review --template; edit the template, not this file\n"
                     + dumps(spec), fsync=False)
        task.spec = str(path)
    return tasks
