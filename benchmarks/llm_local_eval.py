"""The LLM step on a real local model, before/after the compact prompt's worked example (issue 42, docs/evals.md).

    python -m benchmarks.llm_local_eval [--case NAME ...] [--few-shot on|off|both] [--threads N] [--json OUT]

Starts llama-cpp-python's server with SmolLM2-135M (the `[local-llm]` extra) on a free 127.0.0.1 port, runs
`nki-assist eval evals/cases --llm openai` once per condition (with and without the worked example,
NKI_ASSIST_LLM_FEW_SHOT), and prints each condition's LLM-step summary: replies accepted by grounding,
repaired, rejected (fallen back), protocol fallbacks, the top violation kinds, replies citing an invented
finding/number/line, tokens and LLM time, plus the server's HTTP statuses. Minutes per case on 2 cores: run it
on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fakes"))


def run_condition(server, few_shot: bool, cases: list[str], out: Path, timeout_s: int) -> dict:
    env = dict(os.environ, OPENAI_BASE_URL=server.base_url, NKI_ASSIST_MODEL=server.model,
               NKI_ASSIST_LLM_FEW_SHOT="1" if few_shot else "0", HOME=str(out))
    env.pop("OPENAI_API_KEY", None)
    before = len(server.statuses())
    args = [sys.executable, "-m", "nki_assist", "eval", "evals/cases", "--llm", "openai", "--llm-timeout",
            str(timeout_s), "--jobs", "1", "--output-dir", str(out), "--format", "json"]
    for c in cases:
        args += ["--case", c]
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
    step = summary.get("llm_step") or {}
    statuses = Counter(server.statuses()[before:])
    return {"few_shot": few_shot, "exit": proc.returncode, "wall_s": round(time.perf_counter() - t0, 1),
            "http_statuses": dict(sorted(statuses.items())),
            "metrics": {k: summary.get(k) for k in ("precision", "recall", "root_cause_first", "ndcg_at_5",
                                                    "llm_drafted", "llm_fallbacks")},
            **{k: v for k, v in step.items() if k != "rows"}, "rows": step.get("rows", []),
            "stderr_tail": proc.stderr[-600:] if proc.returncode not in (0, 1) else ""}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", default=[], help="only this eval case (repeatable; default: all)")
    ap.add_argument("--few-shot", choices=("on", "off", "both"), default="both")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: up to 4 cores)")
    ap.add_argument("--timeout", type=int, default=900, help="--llm-timeout per request, seconds")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    from local_llm_server import LocalLLM, missing  # tests/fakes: the same server the local_llm tests start

    why = missing()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 2
    conditions = {"on": [True], "off": [False], "both": [False, True]}[args.few_shot]
    results = []
    with tempfile.TemporaryDirectory(prefix="nki-assist-llm-eval-") as tmp, LocalLLM(threads=args.threads) as server:
        for few in conditions:
            print(f"== worked example {'on' if few else 'off'} ...", file=sys.stderr, flush=True)
            res = run_condition(server, few, args.case, Path(tmp) / ("with" if few else "without"), args.timeout)
            results.append(res)
            print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=1), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
