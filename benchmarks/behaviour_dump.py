"""Dump everything nki-assist decides, so a refactor can prove it changed nothing.

    python -m benchmarks.behaviour_dump OUT.json            # write the dump
    python -m benchmarks.behaviour_dump --compare A.json B.json   # list what differs (exit 1 if anything)

The dump holds, for every fixture/example/eval source file, the `check` findings; for every port spec,
the review JSON (timings removed) and, per size, the simulator's trace, outputs (hashes), findings,
peaks and provenance; the eval summary metrics; and the rule table with every rule's docs text.
Wall-clock fields are dropped; everything else must be byte-for-byte stable between runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("examples", "evals/cases", "tests/fixtures")
VOLATILE = {"seconds", "elapsed_s", "elapsed", "spec"}  # wall clock, and the spec path as given


# Traceback frames inside nki-assist's own modules move with every edit of those modules; the file name
# stays (which module raised), the line number does not count as behaviour.
_OWN_FILES = {p.name for p in (ROOT / "nki_assist").rglob("*.py")}


def _frame(frame: Any) -> Any:
    # Files move between modules in a restructuring; which of our own modules raised is not behaviour.
    if isinstance(frame, str) and frame.rpartition(":")[0] in _OWN_FILES:
        return "<nki_assist>:<line>"
    return frame


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean([_frame(f) for f in v] if k == "frames" and isinstance(v, list) else v)
                for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):  # a checkout in another directory (a worktree) must dump the same
        return value.replace(str(ROOT), "<ROOT>")
    if isinstance(value, np.ndarray):
        return _digest(value)
    if isinstance(value, (np.integer, np.floating)):
        return repr(value.item())
    if is_dataclass(value) and not isinstance(value, type):
        return _clean(asdict(value))
    if hasattr(value, "model_dump"):
        return _clean(value.model_dump(mode="json"))
    return value


def _digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    return f"{a.dtype}{list(a.shape)}:" + hashlib.sha256(a.tobytes()).hexdigest()[:16]


def _sources() -> list[Path]:
    out = []
    for d in SOURCE_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".py", ".cu", ".cuh") and p.is_file() and "__pycache__" not in p.parts:
                out.append(p)
    return out


SPEC_DIRS = list(SOURCE_DIRS)  # --spec-dir narrows the port specs whose reviews and runs are dumped


def _specs() -> list[Path]:
    return sorted(p for d in SPEC_DIRS for p in (ROOT / d).rglob("port.toml"))


def dump_check() -> dict[str, Any]:
    from nki_assist.check import CheckOptions, check_text

    out = {}
    for p in _sources():
        rel = str(p.relative_to(ROOT))
        res = check_text(rel, p.read_text(encoding="utf-8", errors="replace"), CheckOptions(target="trn2"))
        out[rel] = {"status": res.status, "findings": [_clean(f.to_json()) for f in res.findings]}
    return out


def dump_reviews() -> dict[str, Any]:
    from nki_assist.review import ReviewOptions, review_port

    out = {}
    for spec in _specs():
        rel = str(spec.relative_to(ROOT))
        try:
            # repairs are bounded by wall time (docs/diagnosis.md), so the dump reviews without re-running edits
            res = review_port(str(spec), ReviewOptions(plots=False, repair_budget_s=0))
            out[rel] = _clean(res.review.model_dump(mode="json"))
        except Exception as exc:  # a spec error is behaviour too
            out[rel] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def dump_runs() -> dict[str, Any]:
    """The simulator in-process on each port's sizes: trace, outputs, findings, peaks, provenance."""
    from nki_assist.api.hardware import get_target
    from nki_assist.numerics.inputs import make_inputs
    from nki_assist.numerics.spec import load_spec
    from nki_assist.sim import run_kernel

    out = {}
    for spec_path in _specs():
        rel = str(spec_path.relative_to(ROOT))
        try:
            spec = load_spec(spec_path)
        except Exception as exc:
            out[rel] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        for size in spec.sizes:
            if spec.input_bytes(size) > 64 << 20:
                continue
            key = f"{rel}#{size.name}"
            try:
                args = make_inputs(spec, size)
                res = run_kernel(str(spec.nki_path), spec.kernel_name, args, target=get_target(spec.target))
            except Exception as exc:
                out[key] = {"error": f"{type(exc).__name__}: {exc}"}
                continue
            out[key] = {
                "status": res.status, "error": res.error, "error_line": res.error_line,
                "outputs": [_digest(np.asarray(o)) for o in res.outputs],
                "findings": [_clean(f.to_json()) for f in res.findings],
                "trace": hashlib.sha256(json.dumps(_clean(res.trace)).encode()).hexdigest()[:16],
                "trace_len": len(res.trace), "peaks": _clean(res.peaks), "notes": res.notes,
                "provenance": hashlib.sha256(json.dumps(_clean(res.provenance), default=str).encode()).hexdigest()[:16],
            }
    return out


def dump_eval() -> dict[str, Any]:
    from nki_assist.evalsuite.runner import run_suite

    summary, records, problems = run_suite(str(ROOT / "evals" / "cases"), jobs=2)
    return _clean({"summary": {k: v for k, v in summary.items() if k != "per_case"}, "cases": records,
                   "problems": problems})


def dump_rules() -> dict[str, Any]:
    from nki_assist.rules import registry

    return {r.id: {"name": r.name, "category": r.category, "severity": r.severity.value, "source": r.source,
                   "fix": r.fix, "summary": r.summary, "docs": registry.docs_text(r.id)}
            for r in registry.all_rules()}


def dump_corpora() -> dict[str, Any]:
    """`check --format json` of each public corpus folder in ../shared/corpora, through the CLI."""
    import subprocess

    corpora = ROOT.parent / "shared" / "corpora"
    out: dict[str, Any] = {}
    if not corpora.is_dir():
        return out
    for d in sorted(p for p in corpora.iterdir() if p.is_dir()):
        proc = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--no-cache", "--exit-zero",
                               "--format", "json", str(d)], capture_output=True, text=True, cwd=ROOT)
        try:
            out[d.name] = _clean(json.loads(proc.stdout))
        except ValueError:
            out[d.name] = {"rc": proc.returncode, "stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]}
    return out


PARTS = {"rules": dump_rules, "corpora": dump_corpora, "check": dump_check, "runs": dump_runs, "reviews": dump_reviews, "eval": dump_eval}


def compare(a: dict, b: dict, path: str = "") -> list[str]:
    diffs: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                diffs.append(f"{path}/{k}: only in the second")
            elif k not in b:
                diffs.append(f"{path}/{k}: only in the first")
            else:
                diffs += compare(a[k], b[k], f"{path}/{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diffs += compare(x, y, f"{path}[{i}]")
    elif a != b:
        diffs.append(f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.behaviour_dump", description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="where to write the dump (JSON)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two dumps instead")
    ap.add_argument("--only", action="append", choices=sorted(PARTS), help="dump only these parts")
    ap.add_argument("--spec-dir", action="append", metavar="DIR",
                    help="port specs only under these directories (default: " + ", ".join(SOURCE_DIRS) + ")")
    args = ap.parse_args(argv)
    if args.spec_dir:
        SPEC_DIRS[:] = args.spec_dir
    if args.compare:
        a, b = (json.loads(Path(p).read_text()) for p in args.compare)
        diffs = compare(a, b)
        print("\n".join(diffs[:200]) or "identical")
        if len(diffs) > 200:
            print(f"... {len(diffs) - 200} more")
        return 1 if diffs else 0
    if not args.out:
        ap.error("give OUT.json or --compare A B")
    data = {}
    for name in args.only or PARTS:
        print(f"dumping {name} ...", file=sys.stderr)
        data[name] = PARTS[name]()
    Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
