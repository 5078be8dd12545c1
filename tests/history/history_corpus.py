"""Public-history regression corpus: defects that maintainers of public NKI repositories later fixed.

Each pair in pairs.toml names a repository, a fix commit, its parent (the defective version), the kernel file and
the defect's lines in the parent. No kernel code lives in this repository: the runner reads both versions from
local snapshots (bare git directories, `<NKI_HISTORY_MIRRORS>/<owner>+<name>/repo`, default root below),
extracts the kernel's directory at each commit into a temporary directory (package siblings included) and runs
`nki-assist check` (the library's check_file) on the kernel file in both.

Per pair:
  found     a warning/error finding on the parent within +-1 line of a defect line (its own line or one of its
            related locations) whose rule is one the pair expects ("rule") or whose taxonomy category is the one
            the defect class maps to ("category")
  missed    no such finding (an expected rule that fires elsewhere but names a defect line in its evidence is
            shown, not counted)
  no snapshot / no file   the repository or the file at that commit is not on this machine (not counted)
and the error-level findings on the fixed version (each one a potential false error; one at a defect line of a later
pair whose parent is this fix is a true error, listed apart).

    python tests/history/history_corpus.py             # markdown table, one row per pair, then the summary line
    python tests/history/history_corpus.py --summary   # per-class counts and the summary line, per set
    python tests/history/history_corpus.py trnfft      # only pairs whose id or repo contains "trnfft"

Four sets, each reported as its own section:
  tuned           pairs.toml, ids without a held prefix: the rules were written with these in view
  held-out set 1  pairs.toml, ids "held-*": mined after the rules were written, analysed 2026-12-05; rules may be
                  tuned on it from then on
  held-out set 2  pairs_held2.toml, ids "held2-*": mined 2026-12-05 blind to the rules (defect lines recorded
                  before `check` ran on them; measured blind: 5 of 14), analysed 2026-12-05; rules may be tuned
                  on it from then on
  held-out set 3  pairs_held3.toml, ids "held3-*": mined 2026-12-05 blind to the rules (defect lines recorded and
                  committed before `check` ran on them); no rule may be tuned on it until it is declared analysed

Snapshots (`<NKI_HISTORY_MIRRORS>/<owner>+<name>/repo`, a bare git directory or a clone's .git; get them with
the fetch tool or `git clone --mirror https://github.com/<owner>/<name> <owner>+<name>/repo`):
  pairs.toml         aws-neuron+nki-samples, trnsci+trnfft, aws-neuron+neuronx-distributed-inference
  pairs_held2.toml   trnsci+trnsparse, trnsci+trnrand, trnsci+trnsolver, trnsci+trntensor, huggingface+optimum-neuron
  pairs_held3.toml   aws-neuron+aws-neuron-sdk, aws-neuron+nkipy, awslabs+nki-autotune, xaviergonzalez+asst4-trainium2,
                     ucb-bar+autocomp, varuntej07+aws-nki
A pair whose snapshot is absent is reported "no snapshot" and not counted; test_history.py skips the measured
tests of a file whose snapshots are not all present (CI has none: only the pair files' shape is tested there).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MIRRORS = "/work/.mirror"
PAIRS_FILE = Path(__file__).with_name("pairs.toml")
HELD2_FILE = Path(__file__).with_name("pairs_held2.toml")  # held-out set 2 (mined blind; analysed 2026-12-05)
HELD3_FILE = Path(__file__).with_name("pairs_held3.toml")  # held-out set 3 (mined blind 2026-12-05; blind)
FIELDS = ("id", "repo", "fix", "parent", "path", "lines", "class", "rules", "description")

# Defect classes and the taxonomy category a finding of that class carries (None: no category counts).
CLASSES: dict[str, str | None] = {
    "api-surface": "migration-correctness",  # names/keywords/conventions the target NKI version lacks
    "dimension-roles": "migration-correctness",  # a tile constant of one axis sizing another
    "numerics": "numerical-accuracy",
    "loop-carried": "migration-correctness",  # a value read across iterations / after its loop
    "tails-masks": "migration-correctness",
    "indexing": "migration-correctness",
    "kernel-discovery": None,  # the tool never looked at the kernel
    "syntax": "migration-correctness",
    "target-generation": "migration-correctness",  # hardware-generation checks
    "semantics": None,  # wrong operator/variable: only a run or a named rule can tell
}
REPORTED = ("error", "warning")
# Held-out set 1 (pairs.toml, mined after the rules were written) and held-out set 2 (pairs_held2.toml, mined blind
# to the rules): both analysed 2026-12-05, rules may be tuned on them since; each reported as its own section.
HELD_OUT_PREFIX = "held-"
HELD2_PREFIX = "held2-"
HELD1_LABEL = "held-out set 1, analysed 2026-12-05 (rules may be tuned on it)"
HELD2_LABEL = "held-out set 2, analysed 2026-12-05 (rules may be tuned on it)"
# Held-out set 3 (pairs_held3.toml): mined blind to the rules; no rule may be tuned on it while this label stands.
HELD3_PREFIX = "held3-"
HELD3_LABEL = "held-out set 3, mined 2026-12-05 blind to the rules"


@dataclass
class Pair:
    id: str
    repo: str
    fix: str
    parent: str
    path: str
    lines: list[int]
    cls: str
    rules: list[str]
    description: str


@dataclass
class Outcome:
    pair: Pair
    verdict: str  # "found" | "missed" | "no snapshot" | "no file"
    by: str = ""  # "rule" | "category" when found
    hits: list[str] = field(default_factory=list)  # "RULE@line" of the matching parent findings
    parent_findings: int = 0
    fixed_errors: list[str] = field(default_factory=list)  # "RULE@line" errors on the fixed version
    later_fixed: list[str] = field(default_factory=list)  # of those, at a defect line of a later pair (true)
    at_line: list[str] = field(default_factory=list)  # "RULE@line" of any warning/error near a defect line


def load_pairs(path: Path = PAIRS_FILE) -> list[Pair]:
    data = tomllib.loads(path.read_text())
    return [Pair(id=p["id"], repo=p["repo"], fix=p["fix"], parent=p["parent"], path=p["path"],
                 lines=list(p["lines"]), cls=p["class"], rules=list(p["rules"]),
                 description=p["description"]) for p in data.get("pair", [])]


def load_all_pairs() -> list[Pair]:
    """pairs.toml, then held-out sets 2 and 3 (pairs_held2.toml, pairs_held3.toml) when those files are present."""
    return load_pairs(PAIRS_FILE) + [p for f in (HELD2_FILE, HELD3_FILE) if f.is_file() for p in load_pairs(f)]


def is_held_out(pair: Pair) -> bool:
    return pair.id.startswith(HELD_OUT_PREFIX)


def is_held2(pair: Pair) -> bool:
    return pair.id.startswith(HELD2_PREFIX)


def is_held3(pair: Pair) -> bool:
    return pair.id.startswith(HELD3_PREFIX)


def split_held_out(outcomes: list[Outcome]) -> tuple[list[Outcome], list[Outcome]]:
    """(pairs the rules were written with, held-out set 1); held-out sets 2 and 3 are in neither (split_held2/3)."""
    return ([o for o in outcomes if not (is_held_out(o.pair) or is_held2(o.pair) or is_held3(o.pair))],
            [o for o in outcomes if is_held_out(o.pair)])


def split_held2(outcomes: list[Outcome]) -> list[Outcome]:
    """Held-out set 2."""
    return [o for o in outcomes if is_held2(o.pair)]


def split_held3(outcomes: list[Outcome]) -> list[Outcome]:
    """Held-out set 3."""
    return [o for o in outcomes if is_held3(o.pair)]


def mirrors_root() -> str:
    return os.environ.get("NKI_HISTORY_MIRRORS", DEFAULT_MIRRORS)


def repo_dir(repo: str, root: str | None = None) -> str | None:
    """The bare git directory of `owner/name` under the mirrors root, or None when absent."""
    path = os.path.join(root or mirrors_root(), repo.replace("/", "+"), "repo")
    return path if os.path.isdir(path) else None


def available(pairs: list[Pair], root: str | None = None) -> bool:
    """True when every repository the pairs name has a snapshot holding both commits."""
    for repo in {p.repo for p in pairs}:
        d = repo_dir(repo, root)
        if d is None:
            return False
        for p in pairs:
            if p.repo == repo:
                for c in (p.parent, p.fix):
                    if subprocess.run(["git", "-C", d, "cat-file", "-e", f"{c}^{{commit}}"],
                                      check=False, capture_output=True).returncode:
                        return False
    return True


def extract(gitdir: str, commit: str, path: str, dest: Path) -> Path | None:
    """Write the kernel's directory at `commit` into dest; the kernel file's path, or None when absent."""
    folder = str(Path(path).parent) or "."
    proc = subprocess.run(["git", "-C", gitdir, "archive", "--format=tar", commit, folder],
                          check=False, capture_output=True)
    if proc.returncode:
        return None
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    target = dest / path
    return target if target.is_file() else None


def _check(path: Path) -> list:
    from nki_assist.check import CheckOptions, check_file

    return check_file(str(path), CheckOptions(target="trn2")).findings


def _criterion(f) -> str:
    from nki_assist import taxonomy

    return getattr(f, "criterion", "") or taxonomy.criterion_of(f.category)


def _near(line: int | None, lines: list[int]) -> bool:
    return line is not None and any(abs(line - d) <= 1 for d in lines)


def judge(pair: Pair, parent_findings: list, fixed_findings: list) -> Outcome:
    """The verdict for one pair from its two versions' findings (Finding objects)."""
    out = Outcome(pair, "missed", parent_findings=len(parent_findings))
    reported = [f for f in parent_findings if f.severity.value in REPORTED]
    near = [f for f in reported
            if _near(f.line, pair.lines) or any(_near(r.line, pair.lines) for r in getattr(f, "related", []))]
    out.at_line = sorted({f"{f.rule}@{f.line}" for f in near})
    by_rule = [f for f in near if f.rule in pair.rules]
    category = CLASSES.get(pair.cls)
    # the class maps to a review criterion (taxonomy.toml): a finding's criterion, not its category slug
    by_cat = [f for f in near if category is not None and _criterion(f) == category]
    if by_rule or by_cat:
        out.verdict, out.by = "found", ("rule" if by_rule else "category")
        out.hits = sorted({f"{f.rule}@{f.line}" for f in (by_rule or by_cat)})
    else:  # an expected rule elsewhere whose evidence names a defect line: shown, not counted
        for f in reported:
            named = [n for k, n in getattr(f, "evidence", {}).items()
                     if k.endswith("_line") and isinstance(n, int) and _near(n, pair.lines)]
            if f.rule in pair.rules and named:
                out.hits.append(f"{f.rule}@{f.line} (names line {min(named, key=lambda n: (n not in pair.lines, n))})")
    out.fixed_errors = sorted({f"{f.rule}@{f.line}" for f in fixed_findings if f.severity.value == "error"})
    return out


def run_pair(pair: Pair, root: str | None = None) -> Outcome:
    gitdir = repo_dir(pair.repo, root)
    if gitdir is None:
        return Outcome(pair, "no snapshot")
    with tempfile.TemporaryDirectory(prefix="nki-history-") as tmp:
        parent = extract(gitdir, pair.parent, pair.path, Path(tmp) / "parent")
        fixed = extract(gitdir, pair.fix, pair.path, Path(tmp) / "fix")
        if parent is None or fixed is None:
            return Outcome(pair, "no file")
        return judge(pair, _check(parent), _check(fixed))


def _blob(repo: str, commit: str, path: str, root: str | None = None) -> str | None:
    gitdir = repo_dir(repo, root)
    if gitdir is None:
        return None
    proc = subprocess.run(["git", "-C", gitdir, "rev-parse", f"{commit}:{path}"], check=False, capture_output=True,
                          text=True)
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def set_later_fixed(outcomes: list[Outcome], pairs: list[Pair], blob=None) -> None:
    """Move an error on a fixed version to `later_fixed` when it sits at a defect line of a pair whose parent is
    that fixed version (same file): one fix's result is the next defect's parent, and that error is true.
    With `blob` (repo, commit, path -> file hash), a later parent holding the very same file counts too (the
    commits between them touched other files)."""
    def same_version(p: Pair, q: Pair) -> bool:
        if q.repo != p.repo or q.path != p.path:
            return False
        if q.parent == p.fix:
            return True
        return blob is not None and blob(q.repo, q.parent, q.path) not in (None, "") and \
            blob(q.repo, q.parent, q.path) == blob(p.repo, p.fix, p.path)

    for o in outcomes:
        later = [q.lines for q in pairs if q is not o.pair and same_version(o.pair, q)]
        if not later:
            continue
        true = [e for e in o.fixed_errors if any(_near(int(e.rsplit("@", 1)[1]), ls) for ls in later)]
        o.later_fixed = true
        o.fixed_errors = [e for e in o.fixed_errors if e not in true]


def run_all(select: list[str] | None = None, root: str | None = None,
            pairs: list[Pair] | None = None) -> list[Outcome]:
    """Outcomes of `pairs` (default: every pair of every file), filtered by `select`; a fixed version's error at a
    later pair's defect line is judged against every pair of every file."""
    every = load_all_pairs()
    pairs = [p for p in (every if pairs is None else pairs)
             if not select or any(s in p.id or s in p.repo for s in select)]
    outcomes = [run_pair(p, root) for p in pairs]
    set_later_fixed(outcomes, every, blob=lambda repo, commit, path: _blob(repo, commit, path, root))
    return outcomes


def numbers(outcomes: list[Outcome]) -> dict:
    counted = [o for o in outcomes if o.verdict in ("found", "missed")]
    found = [o for o in counted if o.verdict == "found"]
    return {"pairs": len(counted), "found": len(found),
            "found_by_rule": sum(o.by == "rule" for o in found),
            # per fixed file: two pairs from one fix in one file share their fixed version's findings
            "false_errors": len({(o.pair.repo, o.pair.fix, o.pair.path, e) for o in counted for e in o.fixed_errors}),
            "pairs_with_false_errors": sum(bool(o.fixed_errors) for o in counted)}


def summary_line(outcomes: list[Outcome]) -> str:
    n = numbers(outcomes)
    pct = 100.0 * n["found"] / n["pairs"] if n["pairs"] else 0.0
    return (f"found {n['found']} of {n['pairs']} = {pct:.0f}% ({n['found_by_rule']} by an expected rule), "
            f"false errors on fixed versions {n['false_errors']} (in {n['pairs_with_false_errors']} pairs)")


def markdown(outcomes: list[Outcome]) -> str:
    rows = [("| pair | repo | fix | class | verdict | parent findings at the defect | parent findings (all) "
             "| errors on the fixed version |"),
            "|---|---|---|---|---|---|---|---|"]
    for o in outcomes:
        p = o.pair
        verdict = f"found ({o.by})" if o.verdict == "found" else o.verdict
        rows.append(f"| {p.id} | {p.repo} | {p.fix[:7]} | {p.cls} | {verdict} | {', '.join(o.hits) or '-'} "
                    f"| {o.parent_findings} | {', '.join(o.fixed_errors) or '-'}"
                    + (f" (true, fixed by a later pair: {', '.join(o.later_fixed)})" if o.later_fixed else "") + " |")
    return "\n".join(rows) + "\n\n" + summary_lines(outcomes)


def summary_lines(outcomes: list[Outcome]) -> str:
    """The summary line of the tuned pairs, then each held-out set's own line (when any of it was run)."""
    tuned, held = split_held_out(outcomes)
    held2 = split_held2(outcomes)
    lines = [summary_line(tuned)] if tuned else []
    if held:
        lines.append(f"{HELD1_LABEL}: " + summary_line(held))
    if held2:
        lines.append(f"{HELD2_LABEL}: " + summary_line(held2))
    if held3 := split_held3(outcomes):
        lines.append(f"{HELD3_LABEL}: " + summary_line(held3))
    return "\n".join(lines)


def class_table(outcomes: list[Outcome]) -> str:
    classes: dict[str, list[int]] = {}
    for o in outcomes:
        if o.verdict in ("found", "missed"):
            c = classes.setdefault(o.pair.cls, [0, 0])
            c[0] += o.verdict == "found"
            c[1] += 1
    rows = ["| class | found | missed | pairs |", "|---|---|---|---|"]
    rows += [f"| {k} | {v[0]} | {v[1] - v[0]} | {v[1]} |"
             for k, v in sorted(classes.items(), key=lambda kv: (-kv[1][1], kv[0]))]
    return "\n".join(rows)


def upper_bound_line(outcomes: list[Outcome]) -> str:
    """Pairs with any warning/error within +-1 line of a defect line, whatever its rule or category."""
    counted = [o for o in outcomes if o.verdict in ("found", "missed")]
    return (f"any warning/error within +-1 line of a defect line (any rule or category; an upper bound, not a "
            f"verdict): {sum(bool(o.at_line) for o in counted)} of {len(counted)}: "
            + "; ".join(f"{o.pair.id} {', '.join(o.at_line)}" for o in counted if o.at_line))


def summary(outcomes: list[Outcome]) -> str:
    tuned, held = split_held_out(outcomes)
    held2 = split_held2(outcomes)
    parts = [class_table(tuned) + "\n\n" + summary_line(tuned)] if tuned else []
    for label, group in ((HELD1_LABEL, held), (HELD2_LABEL, held2), (HELD3_LABEL, split_held3(outcomes))):
        if group:
            parts.append(f"{label}:\n\n" + class_table(group) + "\n\n" + summary_line(group) + "\n"
                         + upper_bound_line(group))
    return "\n\n".join(parts)


def main(argv: list[str]) -> int:
    pairs = load_all_pairs()
    if not any(repo_dir(r) for r in {p.repo for p in pairs}):
        print(f"no repository snapshots (set NKI_HISTORY_MIRRORS; default {DEFAULT_MIRRORS})", file=sys.stderr)
        return 2
    short = "--summary" in argv
    outcomes = run_all([a for a in argv if a != "--summary"] or None)
    print(summary(outcomes) if short else markdown(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
