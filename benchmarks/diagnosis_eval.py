"""Measure the failing-size diagnosis on the corpus under evals/diagnosis (issue 39).

    python -m benchmarks.diagnosis_eval                    # every port, table + summary
    python -m benchmarks.diagnosis_eval --only NAME ...    # some ports
    python -m benchmarks.diagnosis_eval --json OUT.json --budget 3 --faithful 4

Each port's kernel passes at one size and fails at another; its gold.toml names the root-cause line and the
faithful text of that line. Ports marked `heldout = true` were written after the diagnosis was tuned on the
others and are summarised apart. Per port the full review runs (static, migration, numerics, diagnosis):

- before: the review's first finding other than the diagnosis (what `review` said before issue 39) - does it
  sit within 2 lines of the gold line, and is it a confidently wrong cause (an error/warning elsewhere)?
- after: the diagnosis finding (DIAG101 proven / DIAG102 ranked lines) - its line within 2 of the gold line,
  a proven fix at that line, and confidently wrong = a DIAG101 (error) at another line.
- faithful: for the ports of FAITHFUL, the kernel with the gold line replaced by its faithful text is reviewed;
  it must pass every size and keep 0 error/warning findings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "evals" / "diagnosis"
NEAR = 2
# ports whose faithful version is shape-safe as written (ceil trip counts, masks or min() clamps, or shapes the
# spec fixes): their review must keep 0 error/warning findings
FAITHFUL = ("bias_add_rmod_count_legacy", "center_padded_mean_new", "softmax_last_tile_rmod_new",
            "relu_floor_trips_legacy", "scale_else_branch_new")


def ports(only: list[str] | None = None) -> list[Path]:
    out = sorted(p for p in CORPUS.iterdir() if (p / "gold.toml").is_file())
    return [p for p in out if not only or p.name in only]


def gold(port: Path) -> dict:
    return tomllib.loads((port / "gold.toml").read_text())["gold"]


def _review(spec: Path, budget: float):
    from nki_assist.review import ReviewOptions, review_port

    opts = ReviewOptions(plots=False, llm="none", repair_budget_s=budget)
    return review_port(str(spec), opts).review


def score(port: Path, budget: float) -> dict:
    g = gold(port)
    t0 = time.perf_counter()
    review = _review(port / "port.toml", budget)
    secs = time.perf_counter() - t0
    fs = review.findings
    diag = next((f for f in fs if f.rule.startswith("DIAG")), None)
    before = next((f for f in fs if not f.rule.startswith("DIAG")), None)

    def near(line):
        return line is not None and abs(line - g["line"]) <= NEAR

    row = {"port": port.name, "family": g["family"], "dialect": g["dialect"], "gold_line": g["line"],
           "heldout": bool(g.get("heldout")),
           "seconds": round(secs, 2),
           "before_line": before.line if before else None, "before_rule": before.rule if before else None,
           "before_hit": near(before.line if before else None),
           "before_wrong": bool(before and before.severity.value in ("error", "warning") and not near(before.line)
                                and before.category != "output-mismatch"),
           "line": diag.line if diag else None, "rule": diag.rule if diag else None,
           "category": diag.category if diag else None,
           "hit": near(diag.line if diag else None),
           "proven": bool(diag and diag.rule == "DIAG101" and near(diag.line)),
           "wrong": bool(diag and diag.rule == "DIAG101" and not near(diag.line)),
           "edit": (diag.evidence.get("repair") or {}).get("edit") if diag else None,
           "fix": diag.fix if diag else None, "message": diag.message if diag else None,
           "budget_note": next((n for n in review.notes if n.startswith("diagnosis of")), None),
           "summary": review.assessment.summary if review.assessment else None}
    return row


def faithful(port: Path, budget: float) -> dict:
    """The port with its gold line restored: every size must pass and no error/warning remain."""
    g = gold(port)
    with tempfile.TemporaryDirectory(prefix="nki-diag-") as tmp:
        dst = Path(tmp) / port.name
        shutil.copytree(port, dst)
        lines = (dst / "kernel.py").read_text().split("\n")
        lines[g["line"] - 1] = g["fixed"]
        (dst / "kernel.py").write_text("\n".join(lines))
        review = _review(dst / "port.toml", budget)
    bad = [f"{f.rule}:{f.line}" for f in review.findings if f.severity.value in ("error", "warning")]
    return {"port": port.name, "warnings": bad}


def summary(rows: list[dict], faith: list[dict]) -> dict:
    out = _summary(rows, faith)
    held = [r for r in rows if r.get("heldout")]
    if held and len(held) < len(rows):
        out["development"] = _summary([r for r in rows if not r.get("heldout")], [])
        out["heldout"] = _summary(held, [])
    return out


def _summary(rows: list[dict], faith: list[dict]) -> dict:
    n = len(rows) or 1
    return {"ports": len(rows), "families": len({r["family"] for r in rows}),
            "dialects": sorted({r["dialect"] for r in rows}),
            "before_line_hit": round(sum(r["before_hit"] for r in rows) / n, 3),
            "before_confidently_wrong": sum(r["before_wrong"] for r in rows),
            "line_first_hit": round(sum(r["hit"] for r in rows) / n, 3),
            "proven_fix": round(sum(r["proven"] for r in rows) / n, 3),
            "confidently_wrong": sum(r["wrong"] for r in rows),
            "faithful_ports": len(faith), "faithful_warnings": sum(len(f["warnings"]) for f in faith),
            "mean_seconds": round(sum(r["seconds"] for r in rows) / n, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.diagnosis_eval", description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="port folder names")
    ap.add_argument("--budget", type=float, default=4.0, help="repair budget per failing size (default 4 s)")
    ap.add_argument("--faithful", type=int, default=len(FAITHFUL),
                    help=f"faithful versions of the first N of {', '.join(FAITHFUL)} (default all)")
    ap.add_argument("--json", help="write rows and summary here")
    args = ap.parse_args(argv)
    rows = []
    chosen = ports(args.only)
    for i, p in enumerate(chosen, 1):
        r = score(p, args.budget)
        rows.append(r)
        print(f"[{i}/{len(chosen)}] {r['port']:<36} gold {r['gold_line']:>3}  before {r['before_rule']}:"
              f"{r['before_line']}  after {r['rule']}:{r['line']} {'proven' if r['proven'] else ''}"
              f"{' WRONG' if r['wrong'] else ''}  {r['seconds']} s", flush=True)
    faith = [faithful(CORPUS / name, args.budget) for name in FAITHFUL[:args.faithful]]
    for f in faith:
        print(f"faithful {f['port']}: {f['warnings'] or 'no error/warning'}")
    s = summary(rows, faith)
    print(json.dumps(s, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "faithful": faith, "summary": s}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
