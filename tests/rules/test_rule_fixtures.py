"""Every static rule fires exactly on its positive fixtures' marked lines and nowhere on negatives.

Layout: tests/fixtures/rules/<RULE_ID>/pos_*.{py,cu,cuh} and neg_*.{py,cu,cuh}.
A positive fixture marks each line where the rule must fire with `# expect: RULE_ID` (Python) or
`// expect: RULE_ID` (CUDA); several ids may be listed, comma-separated. A first-line comment
`# target: trn1` (or `// target: trn3`) selects the target (default trn2).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.rules.registry import all_rules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
EXPECT = re.compile(r"(?:#|//)\s*expect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
TARGET = re.compile(r"(?:#|//)\s*target:\s*(trn[123])")
SUFFIXES = {".py", ".cu", ".cuh"}


def run_rules(path: Path):
    text = path.read_text(encoding="utf-8")
    m = TARGET.search(text.splitlines()[0] if text else "")
    target = get_target(m.group(1) if m else None)
    rel = str(path)
    if path.suffix == ".py":
        from nki_assist.parse.nki import parse_nki
        from nki_assist.rules.nki.run import run_nki_rules

        return run_nki_rules(parse_nki(text, rel), target)
    from nki_assist.parse.cuda import parse_cuda
    from nki_assist.rules.cuda.checks import run_cuda_rules

    return run_cuda_rules(parse_cuda(text, rel), target)


def expected_lines(path: Path, rule: str) -> set[int]:
    lines = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = EXPECT.search(line)
        if m and rule in {x.strip() for x in m.group(1).split(",")}:
            lines.add(n)
    return lines


def fixture_cases():
    if not FIXTURES.is_dir():
        return []
    return [
        pytest.param(d.name, f, id=f"{d.name}/{f.name}")
        for d in sorted(FIXTURES.iterdir()) if d.is_dir()
        for f in sorted(d.iterdir()) if f.suffix in SUFFIXES and f.name.startswith(("pos_", "neg_"))
    ]


@pytest.mark.parametrize("rule,path", fixture_cases())
def test_fixture(rule: str, path: Path):
    fired = {f.line for f in run_rules(path) if f.rule == rule}
    if path.name.startswith("pos_"):
        want = expected_lines(path, rule)
        assert want, f"{path.name} is a positive fixture without an `expect: {rule}` marker"
        assert fired == want, f"{rule} fired on lines {sorted(fired)}, expected {sorted(want)}"
    else:
        assert not fired, f"{rule} fired on negative fixture lines {sorted(fired)}"


def test_every_static_rule_has_positive_and_negative_fixtures():
    missing = []
    for spec in all_rules():
        if spec.source != "static" or spec.id.startswith("NA"):
            continue
        d = FIXTURES / spec.id
        names = [p.name for p in d.iterdir()] if d.is_dir() else []
        if not any(n.startswith("pos_") for n in names) or not any(n.startswith("neg_") for n in names):
            missing.append(spec.id)
    assert not missing, f"static rules without pos_/neg_ fixtures: {missing}"
