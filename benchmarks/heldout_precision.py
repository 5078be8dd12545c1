"""Precision of `check` on a held-out corpus whose findings were classified by hand (evals/heldout/*.toml).

    python -m benchmarks.heldout_precision evals/heldout/torch2nki.toml CHECKOUT      # run check on CHECKOUT
    python -m benchmarks.heldout_precision evals/heldout/torch2nki.toml --json CHECK.json   # score a saved run
    ... --after      # rows whose message a rule change rewrote use their `verdict_after`

CHECKOUT is the repository at the table's commit (the table names both; the kernels are not in this project).
A finding is matched to the table by (file, line, rule); a grouped finding (evidence["lines"]) counts once, with
the verdict of its first line. Findings the table does not classify are listed: a rule change that makes new
findings on a held-out corpus must say so, not score them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path


def load_table(path: Path, after: bool = False) -> tuple[dict, dict[tuple[str, int, str], bool]]:
    """The table and its verdicts by (file, line, rule); `after`: a row's `verdict_after` (a finding whose message
    a rule change rewrote, judged again from the row's recorded facts) replaces its `verdict`."""
    data = tomllib.loads(path.read_text())
    verdicts = {}
    for row in data.get("finding", []):
        key = (row["file"], int(row["line"]), row["rule"])
        verdict = row.get("verdict_after", row["verdict"]) if after else row["verdict"]
        verdicts[key] = verdicts.get(key, True) and verdict == "true"
    return data, verdicts


def run_check(checkout: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "nki_assist", "check", "--format", "json", "--no-cache", "."],
                          cwd=checkout, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"check failed (exit {proc.returncode}): {proc.stderr.strip()[:400]}")
    return json.loads(proc.stdout)


def score(report: dict, verdicts: dict[tuple[str, int, str], bool]) -> dict:
    """Counts per severity, true/false/unclassified errors and warnings, precision of each."""
    counts = Counter()
    unclassified = []
    for f in report["findings"]:
        sev = f["severity"]
        counts[sev] += 1
        if sev == "info":
            continue
        path = f["file"][2:] if f["file"].startswith("./") else f["file"]
        verdict = verdicts.get((path, f["line"], f["rule"]))
        if verdict is None:
            unclassified.append(f"{path}:{f['line']} {f['rule']} {sev}")
            continue
        counts[f"{sev}_{'true' if verdict else 'false'}"] += 1
    out = {s: counts[s] for s in ("error", "warning", "info")}
    for sev in ("error", "warning"):
        t, fl = counts[f"{sev}_true"], counts[f"{sev}_false"]
        out[f"{sev}s_true"] = t
        out[f"{sev}s_false"] = fl
        out[f"{sev}_precision"] = round(t / (t + fl), 3) if t + fl else None
    out["unclassified"] = unclassified
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table", type=Path)
    ap.add_argument("checkout", type=Path, nargs="?", help="the held-out repository at the table's commit")
    ap.add_argument("--json", type=Path, help="score a saved `check --format json` output instead of running check")
    ap.add_argument("--after", action="store_true", help="use a row's verdict_after where a rule change rewrote "
                                                         "its message")
    args = ap.parse_args(argv)
    if (args.checkout is None) == (args.json is None):
        ap.error("give either CHECKOUT or --json")
    data, verdicts = load_table(args.table, args.after)
    report = json.loads(args.json.read_text()) if args.json else run_check(args.checkout)
    result = {"repo": data.get("repo"), "commit": data.get("commit"), **score(report, verdicts)}
    print(json.dumps(result, indent=2))
    return 1 if result["unclassified"] else 0


if __name__ == "__main__":
    sys.exit(main())
