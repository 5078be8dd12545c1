"""Batch review throughput (issue 43): a generated batch of submissions, `--jobs 1` vs `--jobs 2` (and `--ray`).

    python -m benchmarks.batch_bench generate OUT [--limit N]      # write the submissions (and manifest.jsonl)
    python -m benchmarks.batch_bench run [--limit N] [--ray]       # generate into a temp folder and time it
    python -m benchmarks.batch_bench interleaved [--parts K]       # jobs 1 vs 2 alternating on K slices (shared hosts)
    python -m benchmarks.batch_bench memory [--limit N]            # peak memory of one review process
    python -m benchmarks.batch_bench ray-overhead [--limit N]      # Ray's round trip per task, minus the review

The submissions are variants of the eval cases and the example port, each a copy of the case's folder:
`copy` (unchanged), `reseed`/`reseed2` (other input seeds), `bf16-acc` (the kernel's first float32 made bfloat16: a
planted precision defect) and `skip-last-tile` (the first affine_range loop one trip short: a planted
correctness defect). A variant whose mutation does not apply to a case is not written. The variants of 41 cases
give about 215 submissions. Numbers go to docs/batch.md; measure when the machine is quiet (the load average is
printed with them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(p.parent for p in (ROOT / "evals" / "cases").glob("*/port.toml")) + [ROOT / "examples" / "gemm_bias_relu"]
_AFFINE = re.compile(r"affine_range\(((?:[^()]|\([^()]*\))+)\)")


def _nki_file(case: Path) -> Path | None:
    m = re.search(r'^nki\s*=\s*"([^"]+)"', (case / "port.toml").read_text(), re.M)
    return case / m.group(1) if m else None


def _reseed(case: Path, dst: Path, offset: int = 1000) -> bool:
    spec = dst / "port.toml"
    text = spec.read_text()
    new = re.sub(r"seed\s*=\s*(\d+)", lambda m: f"seed = {int(m.group(1)) + offset}", text)
    if new == text:  # no seeds: add one to every input table
        new = re.sub(r"(\{\s*shape\s*=)", f"{{ seed = {offset + 234}, shape =", text)
    spec.write_text(new)
    return new != text


def _mutate_kernel(dst: Path, case: Path, fn) -> bool:
    nki = _nki_file(case)
    if nki is None:
        return False
    target = dst / nki.relative_to(case)
    text = target.read_text()
    new = fn(text)
    target.write_text(new)
    return new != text


def _bf16(text: str) -> str:
    return text.replace("nl.float32", "nl.bfloat16", 1)


def _skip_last(text: str) -> str:
    return _AFFINE.sub(lambda m: f"affine_range(max(1, ({m.group(1)}) - 1))", text, count=1)


VARIANTS = {
    "copy": lambda case, dst: True,
    "reseed": _reseed,
    "bf16-acc": lambda case, dst: _mutate_kernel(dst, case, _bf16),
    "skip-last-tile": lambda case, dst: _mutate_kernel(dst, case, _skip_last),
    "copy2": lambda case, dst: True,  # a second unchanged copy: same inputs, another id
    "reseed2": lambda case, dst: _reseed(case, dst, 2000),
}


def generate(out: Path, limit: int | None = None) -> list[dict]:
    """Write the submissions under OUT/subs/<case>--<variant>/ and OUT/manifest.jsonl; the manifest entries."""
    out.mkdir(parents=True, exist_ok=True)
    entries = []
    for variant, apply in VARIANTS.items():
        for case in CASES:
            if limit is not None and len(entries) >= limit:
                break
            dst = out / "subs" / f"{case.name}--{variant}"
            if dst.exists():
                shutil.rmtree(dst)
            shutil.copytree(case, dst, ignore=shutil.ignore_patterns("gold.toml", "llm_reply*", "__pycache__"))
            if not apply(case, dst):
                shutil.rmtree(dst)
                continue
            entries.append({"id": dst.name, "spec": f"subs/{dst.name}/port.toml", "variant": variant})
    (out / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    return entries


def _batch(manifest: Path, out: Path, extra: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "nki_assist", "review", str(manifest), "-o", str(out), "-q", *extra],
                   cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _table(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in ("wall_s", "rank")} for r in rows]


def interleaved(limit: int | None, parts: int) -> dict:
    """--jobs 1 and --jobs 2 on the same submissions in PARTS slices, alternating which goes first: on a shared
    machine both then see about the same load (the load average still moves; it is printed per slice)."""
    with tempfile.TemporaryDirectory(prefix="nki-assist-batch-bench-") as tmp:
        tmp = Path(tmp)
        entries = generate(tmp, limit)
        step = -(-len(entries) // parts)
        totals = {1: 0.0, 2: 0.0}
        slices = []
        for i in range(parts):
            chunk = entries[i * step:(i + 1) * step]
            manifest = tmp / f"part{i}.jsonl"
            manifest.write_text("".join(json.dumps(e) + "\n" for e in chunk))
            order = (1, 2) if i % 2 == 0 else (2, 1)
            times = {}
            for jobs in order:
                times[jobs] = _batch(manifest, tmp / f"out{jobs}-{i}", ["--jobs", str(jobs)])
                totals[jobs] += times[jobs]
            slices.append({"n": len(chunk), "jobs1_s": round(times[1], 1), "jobs2_s": round(times[2], 1),
                           "loadavg_1min": round(os.getloadavg()[0], 2)})
        diffs = [d for i in range(parts) for d in table_diff(tmp / f"out1-{i}", tmp / f"out2-{i}")]
    return {"submissions": len(entries), "jobs1_s": round(totals[1], 1), "jobs2_s": round(totals[2], 1),
            "speedup": round(totals[1] / totals[2], 3), "same_tables": not diffs, "differences": diffs[:20],
            "slices": slices}


def table_diff(a: Path, b: Path) -> list[dict]:
    """Rows of two results tables that differ (timings aside): the id and each differing field's two values."""
    rows_a, rows_b = _table(a), _table(b)
    if [r.get("id") for r in rows_a] != [r.get("id") for r in rows_b]:
        return [{"id": None, "rows": [[r.get("id") for r in rows_a], [r.get("id") for r in rows_b]]}]
    out = []
    for x, y in zip(rows_a, rows_b):
        keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        if keys:
            out.append({"id": x.get("id"), **{k: [x.get(k), y.get(k)] for k in keys}})
    return out


def run(limit: int | None, ray: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="nki-assist-batch-bench-") as tmp:
        tmp = Path(tmp)
        n = len(generate(tmp, limit))
        res: dict = {"submissions": n, "loadavg_before": os.getloadavg()}
        for jobs in (1, 2):
            res[f"jobs{jobs}_s"] = _batch(tmp / "manifest.jsonl", tmp / f"out{jobs}", ["--jobs", str(jobs)])
        res["loadavg_after"] = os.getloadavg()
        res["speedup"] = res["jobs1_s"] / res["jobs2_s"]
        res["per_review_s_jobs1"] = res["jobs1_s"] / n
        res["same_tables"] = _table(tmp / "out1") == _table(tmp / "out2")
        if ray:
            res["ray_s"] = _batch(tmp / "manifest.jsonl", tmp / "outray", ["--ray"])
            res["ray_same_table"] = _table(tmp / "out1") == _table(tmp / "outray")
        statuses: dict[str, int] = {}
        for r in _table(tmp / "out2"):
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        res["statuses"] = statuses
    return res


def _measured(task, key, cfg):
    """run_task, with the peak RSS of the review process and of its sandbox children (MiB) as the message."""
    import resource

    from nki_assist.batch.task import run_task

    res = run_task(task, key, cfg)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    res.message = json.dumps({"self_mib": round(own, 1), "children_mib": round(kids, 1)})
    return res


def _tasks(limit: int | None, tmp: Path):
    from nki_assist.batch.keys import task_key
    from nki_assist.batch.manifest import discover
    from nki_assist.batch.task import BatchConfig

    generate(tmp, limit)
    cfg = BatchConfig(review={"plots": False})
    return [(t, task_key(t, cfg.key_options())) for t in discover([str(tmp / "manifest.jsonl")])], cfg


def memory(limit: int) -> dict:
    from nki_assist.batch.pool import LocalPool

    with tempfile.TemporaryDirectory(prefix="nki-assist-batch-bench-") as tmp:
        items, cfg = _tasks(limit, Path(tmp))
        out: list[dict] = []
        LocalPool(1, work=_measured).run(items, cfg, lambda r: out.append(json.loads(r.message)))
    own = sorted(o["self_mib"] for o in out)
    kids = sorted(o["children_mib"] for o in out)
    return {"reviews": len(out), "review_process_peak_mib": {"median": own[len(own) // 2], "max": own[-1]},
            "sandbox_child_peak_mib": {"median": kids[len(kids) // 2], "max": kids[-1]}}


def ray_overhead(limit: int) -> dict:
    from nki_assist.batch.ray_runner import RayRunner

    with tempfile.TemporaryDirectory(prefix="nki-assist-batch-bench-") as tmp:
        items, cfg = _tasks(limit, Path(tmp))
        runner = RayRunner(num_cpus=2)
        t0 = time.perf_counter()
        done: list = []
        runner.run(items, cfg, done.append)
        wall = time.perf_counter() - t0
        runner.shutdown()
    over = sorted(runner.overhead_s)
    return {"tasks": len(done), "wall_s_incl_ray_start": round(wall, 2),
            "overhead_per_task_s": {"median": round(over[len(over) // 2], 3), "max": round(over[-1], 3),
                                    "mean": round(sum(over) / len(over), 3)}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.batch_bench", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--limit", type=int)
    r = sub.add_parser("run")
    r.add_argument("--limit", type=int)
    r.add_argument("--ray", action="store_true")
    i = sub.add_parser("interleaved")
    i.add_argument("--limit", type=int)
    i.add_argument("--parts", type=int, default=6)
    for name in ("memory", "ray-overhead"):
        sub.add_parser(name).add_argument("--limit", type=int, default=12)
    args = p.parse_args(argv)
    if args.cmd == "generate":
        print(f"{len(generate(args.out, args.limit))} submissions in {args.out}")
    elif args.cmd == "interleaved":
        print(json.dumps(interleaved(args.limit, args.parts), indent=2))
    elif args.cmd == "memory":
        print(json.dumps(memory(args.limit), indent=2))
    elif args.cmd == "ray-overhead":
        print(json.dumps(ray_overhead(args.limit), indent=2))
    else:
        print(json.dumps(run(args.limit, args.ray), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
