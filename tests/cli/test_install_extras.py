"""Install weight: the base install (check, LSP, offline review) needs neither matplotlib nor openai;
features that do say which extra to install."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXES = REPO / "tests" / "fixtures" / "fixes"
BLOCK = "import sys; sys.modules['matplotlib'] = None; sys.modules['openai'] = None\n"


def run_without_extras(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)


def test_pyproject_extras():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"])
    assert "matplotlib" not in base and "openai" not in base
    extras = project["optional-dependencies"]
    assert any(d.startswith("matplotlib") for d in extras["report"])
    assert any(d.startswith("openai") for d in extras["llm"])
    assert extras["all"] == ["nki-assist[report,llm]"]


def test_dev_lock_pins_every_dependency_of_the_package_its_extras_and_dev_tools():
    """make and CI install requirements-dev.lock (then the package with --no-deps): it must pin them all."""
    import re

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *extras["report"], *extras["llm"], *extras["dev"]]
    norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731
    names = {norm(re.match(r"[A-Za-z0-9_.-]+", d).group()) for d in wanted}
    lock = (REPO / "requirements-dev.lock").read_text()
    pinned = {norm(m.group(1)) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==\S+", lock, re.M)}
    assert names - pinned == set()
    assert "-r $(LOCK)" in (REPO / "Makefile").read_text() and "LOCK := requirements-dev.lock" in (
        REPO / "Makefile").read_text()


def test_check_and_language_server_load_without_extras(tmp_path):
    code = (f"from nki_assist.cli import main\n"
            f"rc = main(['check', '--no-config', {str(FIXES / 'loop_aliases.py')!r}])\n"
            "from lsp_server.server import create_server\n"
            "create_server()\n"
            "print('rc', rc, [m for m in ('matplotlib', 'openai') if sys.modules.get(m) is not None])\n")
    proc = run_without_extras(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "rc 0 []"
    assert proc.stdout.count("NKI502") == 3


def test_html_review_degrades_without_matplotlib_and_says_which_extra(tmp_path):
    out = tmp_path / "r.html"
    code = (f"from nki_assist.cli import main\n"
            f"sys.exit(main(['review', {str(REPO / 'examples/gemm_bias_relu/port.toml')!r}, '--format', 'html',"
            f" '-o', {str(out)!r}, '-q']))\n")
    proc = run_without_extras(code, tmp_path)
    assert proc.returncode == 1, proc.stderr  # a block verdict, reported in full
    note = "plots skipped: they need matplotlib (pip install 'nki-assist[report]')"
    assert note in proc.stderr
    html = out.read_text()
    assert note in html and "<img" not in html and "Ragged tails are not guarded" in html


def test_llm_without_openai_is_a_usage_error_naming_the_extra(tmp_path):
    code = (f"from nki_assist.cli import main\n"
            f"sys.exit(main(['review', '--nki', {str(FIXES / 'loop_aliases.py')!r}, '--llm', 'openai', '-q']))\n")
    proc = run_without_extras(code, tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "error: --llm openai needs openai, which is not installed: pip install 'nki-assist[llm]'" in proc.stderr
