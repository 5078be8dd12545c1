"""[tool.nki-assist] loading: nearest table wins, values validated, problems collected not raised."""

from __future__ import annotations

from pathlib import Path

from nki_assist.config import DEFAULT_MAX_FILE_BYTES, load_config


def pyproject(directory: Path, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pyproject.toml"
    path.write_text(body, encoding="utf-8")
    return path


FULL = """
[project]
name = "kernels"

[tool.nki-assist]
target = "trn1"
select = ["NKI1", "CUDA"]
ignore = "NKI107"
fail-on = "warning"
max-file-bytes = 1000
exclude = ["gen/*"]

[tool.nki-assist.per-file-ignores]
"tests/*" = ["NKI104", "NA100"]

[tool.nki-assist.severity]
NKI104 = "error"
"""


def test_full_table(tmp_path):
    path = pyproject(tmp_path, FULL)
    (tmp_path / "src" / "deep").mkdir(parents=True)
    cfg = load_config(tmp_path / "src" / "deep")
    assert cfg.problems == []
    assert cfg.path == path and cfg.root == tmp_path
    assert (cfg.target, cfg.select, cfg.ignore, cfg.fail_on) == ("trn1", ["NKI1", "CUDA"], ["NKI107"], "warning")
    assert cfg.per_file_ignores == {"tests/*": ["NKI104", "NA100"]}
    assert cfg.severity == {"NKI104": "error"}
    assert cfg.max_file_bytes == 1000 and cfg.exclude == ["gen/*"]


def test_start_can_be_a_file_and_nested_pyproject_without_table_is_passed_over(tmp_path):
    pyproject(tmp_path, FULL)
    pyproject(tmp_path / "pkg", "[project]\nname = 'inner'\n")
    kernel = tmp_path / "pkg" / "k.py"
    kernel.write_text("", encoding="utf-8")
    assert load_config(kernel).target == "trn1"


def test_nearest_table_wins(tmp_path):
    pyproject(tmp_path, FULL)
    inner = pyproject(tmp_path / "pkg", "[tool.nki-assist]\ntarget = 'trn3'\n")
    cfg = load_config(tmp_path / "pkg")
    assert cfg.path == inner and cfg.target == "trn3" and cfg.select is None and cfg.fail_on is None


def test_defaults_without_config(tmp_path):
    cfg = load_config(tmp_path)
    assert cfg.path is None and cfg.target is None and cfg.select is None and cfg.ignore == []
    assert cfg.max_file_bytes == DEFAULT_MAX_FILE_BYTES and cfg.problems == []


def test_bad_values_are_collected(tmp_path):
    pyproject(tmp_path, """
[tool.nki-assist]
target = "trn9"
fail-on = "sometimes"
select = [1, 2]
max-file-bytes = -5
colour = true

[tool.nki-assist.severity]
NKI104 = "fatal"
""")
    cfg = load_config(tmp_path)
    text = "\n".join(cfg.problems)
    assert len(cfg.problems) == 6
    for needle in ("`target` must be one of trn1, trn2, trn3, got 'trn9'", "`fail-on`", "`select` must be a list",
                   "`max-file-bytes` must be a positive integer", "unknown key `colour`", "`severity.NKI104`"):
        assert needle in text
    assert cfg.target is None and cfg.fail_on is None


def test_invalid_toml_mentioning_the_tool_is_a_problem(tmp_path):
    pyproject(tmp_path, "[tool.nki-assist\ntarget = 'trn1'\n")
    cfg = load_config(tmp_path)
    assert len(cfg.problems) == 1 and "cannot read" in cfg.problems[0]
