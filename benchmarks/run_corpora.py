"""`nki-assist run` on public harnesses, in place: launches, findings and tool limits per corpus (docs/run.md).

    python -m benchmarks.run_corpora [--corpora ../shared/corpora] [--asst4 GIT_DIR] [--only NAME]
                                     [--torch-python PY] [--timeout S] [--json OUT]

Corpora: nki-samples (both snapshots: test_attention.py and every kernel script with a `__main__` harness),
NKIBench (each kernel through tests/fixtures/run/nkibench_harness.py, which follows its reference file), and
stanford-cs149/asst4-trainium (`--asst4`: a git directory, e.g. the `fetch` mirror; its part 1 and part 2
harnesses are exported to a temporary folder, once with the starter and once with our solution from
tests/fixtures/run/asst4/). Part 2's reference needs torch: `--torch-python` names an interpreter that has it.
Nothing public is copied into the project; the programs run where they are (or in the temporary export).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "run"
TOOL_LIMITS = ("SIM117", "SIM115")


def nki_samples_cases(corpora: Path) -> list[tuple[str, str, list[str]]]:
    cases = []
    for snap in sorted(corpora.glob("nki-samples@*")):
        for path in sorted(snap.rglob("*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            launcher = path.name.startswith("test_") or (
                "__main__" in text and not path.stem.endswith(("_torch", "_jax")) and "import nki" in text.replace(
                    "import neuronxcc.nki", "import nki").replace("from neuronxcc import nki", "import nki"))
            if launcher:
                cases.append((snap.name, str(path.parent), ["python", path.name]))
    return cases


def nkibench_cases(corpora: Path) -> list[tuple[str, str, list[str]]]:
    cases = []
    for bench in sorted(corpora.glob("AccelOpt@*/NKIBench")):
        refs = {p.name.split("_numpy")[0]: p for p in (bench / "reference").glob("*.py")}
        for k in sorted((bench / "kernels").glob("*.py")):
            ref = refs.get(k.stem.rsplit("_", 1)[0])
            if ref is not None:
                cases.append((bench.parent.name, str(bench), ["python", str(FIXTURES / "nkibench_harness.py"),
                                                              str(ref), str(k)]))
    return cases


def export_asst4(git_dir: str, dest: Path) -> dict[str, Path]:
    out = {}
    for variant in ("starter", "solution"):
        folder = dest / variant
        folder.mkdir(parents=True)
        archive = subprocess.run(["git", "--git-dir", git_dir, "archive", "HEAD", "part1", "part2"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        if variant == "solution":
            shutil.copy(FIXTURES / "asst4" / "kernels.py", folder / "part1" / "kernels.py")
            shutil.copy(FIXTURES / "asst4" / "conv2d.py", folder / "part2" / "conv2d.py")
        out[variant] = folder
    return out


def asst4_cases(folders: dict[str, Path]) -> list[tuple[str, str, list[str]]]:
    cases = []
    for variant, folder in folders.items():
        name = f"asst4-trainium ({variant})"
        sizes = {"naive": 128, "tiled": 25600, "stream": 25600, "alloc": 256000, "alloc_bad": 256000}
        for kernel, size in sizes.items():
            cases.append((name, str(folder / "part1"), ["python", "vec_add.py", "--kernel", kernel, "--size",
                                                         str(size)]))
        cases.append((name, str(folder / "part2"), ["python", "test_harness.py", "--test_maxpool"]))
    return cases


def run_case(python: str, cwd: str, cmd: list[str], timeout: float, memory_mb: int) -> dict:
    started = time.perf_counter()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([python, "-m", "nki_assist", "run", "--format", "json", "--fail-on", "never",
                           "--timeout", str(timeout), "--memory-mb", str(memory_mb), "--", *cmd],
                          cwd=cwd, capture_output=True, text=True, env=env, check=False)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {"cmd": cmd, "error": (proc.stderr or proc.stdout)[-600:], "seconds": time.perf_counter() - started}
    run = data.get("run", {})
    launches = run.get("launches", [])
    return {
        "cmd": cmd, "cwd": cwd, "program": run.get("program"), "seconds": round(time.perf_counter() - started, 1),
        "launches": len(launches),
        "by_status": {s: sum(1 for x in launches if x["status"] == s) for s in {x["status"] for x in launches}},
        "unfinished": [u.get("kernel") for u in run.get("unfinished", [])],
        "findings": [{"rule": f["rule"], "severity": f["severity"], "where": f"{f['file']}:{f['line']}",
                      "message": f["message"][:240], "tool_limit": f["rule"] in TOOL_LIMITS}
                     for f in data.get("findings", [])],
        "tail": proc.stderr[-800:],
    }


def table(results: list[dict]) -> str:
    rows = ["| corpus | programs | launches (ran / failed / tool limit) | findings | tool limits | programs failed |",
            "|---|---|---|---|---|---|"]
    by: dict[str, list[dict]] = {}
    for r in results:
        by.setdefault(r["corpus"], []).append(r)
    for corpus, rs in by.items():
        ran = sum(r.get("by_status", {}).get("ok", 0) for r in rs)
        lim = sum(r.get("by_status", {}).get("tool-limit", 0) for r in rs)
        n = sum(r.get("launches", 0) for r in rs)
        finds = sorted({f"{f['rule']}" for r in rs for f in r.get("findings", []) if not f["tool_limit"]})
        nf = sum(1 for r in rs for f in r.get("findings", []) if not f["tool_limit"])
        nl_ = sum(1 for r in rs for f in r.get("findings", []) if f["tool_limit"])
        failed = sum(1 for r in rs if not (r.get("program") or "").endswith("status 0"))
        rows.append(f"| {corpus} | {len(rs)} | {n} ({ran} / {n - ran - lim} / {lim}) | {nf} {finds if finds else ''} "
                    f"| {nl_} | {failed} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpora", default=str(ROOT.parent / "shared" / "corpora"))
    ap.add_argument("--asst4", help="git directory of stanford-cs149/asst4-trainium")
    ap.add_argument("--only", action="append", help="run only corpora whose name contains this")
    ap.add_argument("--torch-python", default=sys.executable, help="interpreter that runs nki-assist and the programs; one with torch runs their torch references")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--memory-mb", type=int, default=12288)
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args(argv)
    corpora = Path(args.corpora)
    cases = nki_samples_cases(corpora) + nkibench_cases(corpora)
    tmp = tempfile.mkdtemp(prefix="nki-assist-asst4-")
    try:
        if args.asst4:
            cases += asst4_cases(export_asst4(args.asst4, Path(tmp)))
        if args.only:
            cases = [c for c in cases if any(o in c[0] for o in args.only)]
        results = []
        for i, (corpus, cwd, cmd) in enumerate(cases, 1):
            python = args.torch_python  # programs that import torch for their reference need it
            print(f"[{i}/{len(cases)}] {corpus}: {' '.join(cmd[1:])[-90:]}", file=sys.stderr, flush=True)
            r = run_case(python, cwd, cmd, args.timeout, args.memory_mb)
            r["corpus"] = corpus
            print(f"    {r.get('launches', 0)} launches {r.get('by_status', {})} "
                  f"{[f['rule'] + '@' + f['where'] for f in r.get('findings', [])]} "
                  f"{r.get('program') or r.get('error')} ({r['seconds']} s)", file=sys.stderr, flush=True)
            results.append(r)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
        print(table(results))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
