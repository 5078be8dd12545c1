"""`check` on the real front ends and rules, driven by the rule fixtures (tests/fixtures/rules/<ID>/).

Each positive fixture must produce its rule exactly on its `expect:` lines through the whole check
pipeline (selection, suppressions, JSON output), syntax damage elsewhere must not lose those
findings, and suppression comments must silence them (or be reported unused on negatives).
Skipped until the NKI/CUDA front ends and rule modules exist.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.check import CheckOptions, check_paths, check_source
from nki_assist.rules.nki.run import ABSENCE_RULES, PYTHON_LEVEL_RULES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"
EXPECT = re.compile(r"(?:#|//)\s*expect:\s*([A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)")
TARGET = re.compile(r"(?:#|//)\s*target:\s*(trn[123])")


def _front_ends_ready() -> bool:
    try:
        import nki_assist.parse.cuda  # noqa: F401
        import nki_assist.parse.nki  # noqa: F401
        import nki_assist.rules.cuda.checks  # noqa: F401
        import nki_assist.rules.nki.run  # noqa: F401
    except ImportError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _front_ends_ready(), reason="real NKI/CUDA front ends not built yet")


def fixtures(prefix: str):
    if not FIXTURES.is_dir():
        return []
    return [(d.name, f) for d in sorted(FIXTURES.iterdir()) if d.is_dir()
            for f in sorted(d.iterdir()) if f.name.startswith(prefix) and f.suffix in (".py", ".cu", ".cuh")]


def target_of(text: str) -> str:
    m = TARGET.search(text.splitlines()[0] if text else "")
    return m.group(1) if m else "trn2"


def expected(text: str, rule: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1)
            if (m := EXPECT.search(line)) and rule in {x.strip() for x in m.group(1).split(",")}]


def lines_of(findings, rule, upto: int | None = None):
    """Distinct lines where `rule` fired (a rule may report two things on one line, as the harness allows); a
    grouped finding (one finding per cause) fired on every line it lists in evidence["lines"]."""
    return sorted({ln for f in findings if f.rule == rule for ln in (f.evidence.get("lines") or [f.line])
                   if upto is None or ln <= upto})


def test_fixtures_exist():
    assert fixtures("pos_"), "no positive rule fixtures under tests/fixtures/rules"


@pytest.mark.parametrize("rule,path", fixtures("pos_"), ids=lambda v: getattr(v, "name", v))
def test_positive_fixture_through_check(rule, path):
    text = path.read_text(encoding="utf-8")
    opts = CheckOptions(target=target_of(text))
    want = expected(text, rule)
    report = check_paths([str(path)], opts)
    assert report.errors == [] and report.files_checked == 1
    assert lines_of(report.findings, rule) == want
    assert all(f.file == str(path) for f in report.findings)

    # Syntax damage after the kernels keeps the findings of the parts that parse.
    comment = "#" if path.suffix == ".py" else "//"
    broken = text + ("\ndef broken(:\n    x = = 1\n" if path.suffix == ".py" else "\nvoid broken( {\n  int = ;\n")
    n_lines = len(text.splitlines())
    # ... except the rules that report something missing: on a file Python cannot compile, the missing part is
    # usually the code that did not parse (nki-library's mlp.py), so they skip it; so do the Python-level rules
    kept = [] if rule in ABSENCE_RULES | PYTHON_LEVEL_RULES and path.suffix == ".py" else want
    assert lines_of(check_source(str(path), broken, opts), rule, upto=n_lines) == kept, "syntax error lost findings"

    # A suppression on the first expected line silences exactly that finding.
    lines = text.splitlines()
    first = want[0] - 1
    lines[first] += f"  {comment} noqa: {rule}" if path.suffix == ".py" else f"  // nki-assist: ignore[{rule}]"
    found = check_source(str(path), "\n".join(lines) + "\n", opts)
    assert lines_of(found, rule) == [n for n in want if n != want[0]]
    assert not [f for f in found if f.rule == "NA100" and f.line == want[0]]


@pytest.mark.parametrize("rule,path", fixtures("neg_"), ids=lambda v: getattr(v, "name", v))
def test_negative_fixture_suppression_is_unused(rule, path):
    from nki_assist.check import check_text

    text = path.read_text(encoding="utf-8")
    opts = CheckOptions(target=target_of(text))
    result = check_text(str(path), text, opts)
    if result.status == "skipped":
        pytest.skip(f"{path.name}: {result.reason}")
    assert lines_of(result.findings, rule) == []
    # Put the suppression on a single-line statement (an import / #include / `;` line), never in a string.
    simple = re.compile(r"^(import|from)\s" if path.suffix == ".py" else r"^#include|;\s*$")
    lines = text.splitlines()
    n = next(i for i, ln in enumerate(lines) if simple.search(ln))
    lines[n] += f"  # noqa: {rule}" if path.suffix == ".py" else f"  // nki-assist: ignore[{rule}]"
    found = check_source(str(path), "\n".join(lines) + "\n", opts)
    assert lines_of(found, "NA100") == [n + 1]


def test_cli_json_over_all_fixtures_matches_expect_markers():
    pos = fixtures("pos_")
    by_target: dict[str, list[tuple[str, Path]]] = {}
    for rule, path in pos:
        by_target.setdefault(target_of(path.read_text(encoding="utf-8")), []).append((rule, path))
    for target, items in by_target.items():
        proc = subprocess.run([sys.executable, "-m", "nki_assist.cli", "check", "--format", "json", "--no-config",
                               "--target", target, "--fail-on", "never", *[str(p) for _, p in items]],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert data["schema"] == "nki-assist/check@1"
        for rule, path in items:
            got = sorted({ln for f in data["findings"] if f["rule"] == rule and f["file"] == str(path)
                          for ln in (f["evidence"].get("lines") or [f["line"]])})
            assert got == expected(path.read_text(encoding="utf-8"), rule), f"{rule} {path.name}"
        cuda = [str(p) for _, p in items if p.suffix in (".cu", ".cuh")]
        assert sorted(data["cuda"]) == sorted(cuda)
        assert all(isinstance(v, dict) and v for v in data["cuda"].values())


def test_non_nki_python_and_broken_file_never_traceback(tmp_path):
    (tmp_path / "util.py").write_text("import os\nprint(os.getcwd())\n", encoding="utf-8")
    (tmp_path / "half.py").write_text("import neuronxcc.nki.language as nl\n@nki.jit\ndef k(a:\n  x = (\n",
                                      encoding="utf-8")
    (tmp_path / "half.cu").write_text("__global__ void k(float* a {\n  __shared__ float s[;\n", encoding="utf-8")
    (tmp_path / "bin.cu").write_bytes(bytes(range(256)) * 4)
    report = check_paths([str(tmp_path)], CheckOptions())
    assert report.errors == [], report.errors
    statuses = {Path(r.path).name: r.status for r in report.files}
    assert statuses == {"util.py": "skipped", "half.py": "checked", "half.cu": "checked", "bin.cu": "skipped"}
