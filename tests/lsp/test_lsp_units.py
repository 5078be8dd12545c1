"""In-process tests of the server's pure parts: positions, edits, settings, store, review plumbing."""

from __future__ import annotations

import asyncio
import threading

import pytest
from lsprotocol import types

from lsp_server import engine
from lsp_server.actions import fix_edits, suppression_edit
from lsp_server.positions import from_lsp_position, to_lsp_range
from lsp_server.review import ReviewRefused, find_port_spec, review_kwargs
from lsp_server.settings import Settings, parse_settings
from lsp_server.store import DiagnosticsStore


def test_ranges_count_utf16_units_and_clamp():
    lines = ['x = "𝔘😀é"; y = bad\n', "z\n"]
    r = to_lsp_range(lines, 1, 14, 1, 17)  # `bad` is characters 14..16 (1-based)
    assert (r.start.character, r.end.character) == (15, 18)  # two astral chars: +2; é is one unit
    assert from_lsp_position(lines, types.Position(line=0, character=15)) == (1, 14)
    whole = to_lsp_range(lines, 1)  # no column: the line without indentation, to its end
    assert (whole.start.character, whole.end.character) == (0, 20)
    far = to_lsp_range(lines, 99, 5)  # a stale finding beyond the end stays inside the document
    assert far.start.line == 1 and far.start.character == 1


@pytest.mark.parametrize("line, language, expected_text, expected_col", [
    ("    x = f(a)\n", "nki", "  # noqa: NKI201", 12),
    ("    x = f(a)  # noqa: E501\n", "nki", ", NKI201", 26),
    ("    x = f(a)  # noqa:NKI103,E501\n", "nki", ", NKI201", 32),
    ("  x[i] = y;\n", "cuda", "  // nki-assist: ignore[NKI201]", 11),
    ("  x[i] = y;  // nki-assist: ignore[CUDA101 ]\n", "cuda", ", NKI201", 42),
])
def test_disable_for_this_line_adds_or_extends_the_comment(line, language, expected_text, expected_col):
    edit = suppression_edit([line], 1, "NKI201", language)
    assert edit.new_text == expected_text
    assert edit.range.start.character == expected_col


@pytest.mark.parametrize("line", ["x = 1  # noqa\n", "x = 1  # noqa: nki201\n", "x = (a + \\\n"])
def test_no_suppression_edit_when_already_covered_or_impossible(line):
    assert suppression_edit([line], 1, "NKI201", "nki") is None


def test_quick_fix_edit_is_dropped_when_the_text_changed():
    fix = {"message": "m", "applicability": "safe",
           "edits": [{"line": 1, "column": 10, "end_line": 1, "end_column": 25, "old_text": "nl.affine_range",
                      "content": "nl.sequential_range"}]}
    (edit,) = fix_edits(fix, ["for i in nl.affine_range(4):\n"])
    assert (edit.range.start.character, edit.range.end.character, edit.new_text) == (9, 24, "nl.sequential_range")
    assert fix_edits(fix, ["for i in nl.static_range(4):\n"]) is None
    assert fix_edits({"edits": [{"line": 7, "column": 1, "end_line": 7, "end_column": 2, "content": ""}]},
                     ["x\n"]) is None
    assert fix_edits({"edits": [{"line": 1, "column": 1}]}, ["x\n"]) is None


def test_settings_parse_with_defaults_and_problems():
    s, problems = parse_settings({"target": "trn3", "select": ["NKI1"], "ignore": "NKI202, NKI301",
                                  "diagnostics": {"debounceMs": 120}, "execution": {"enabled": True},
                                  "llm": {"provider": "openai", "model": "m", "baseUrl": "http://x"}})
    assert problems == []
    assert (s.target, s.select, s.ignore, s.debounce_ms) == ("trn3", ("NKI1",), ("NKI202", "NKI301"), 120)
    assert s.execution_enabled and (s.llm_provider, s.llm_model, s.llm_base_url) == ("openai", "m", "http://x")
    bad, problems = parse_settings({"target": "h100", "execution": {"enabled": "yes"},
                                    "diagnostics": {"debounceMs": -1}, "apiKey": "sk-never-read"})
    assert bad == Settings() and len(problems) == 3
    assert not hasattr(bad, "api_key")


def test_store_pushes_or_serves_pulls_never_both():
    pushed = []
    push = DiagnosticsStore(publish=pushed.append)
    d = types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0),
                                           end=types.Position(line=0, character=1)), message="m")
    push.set("file:///a.py", 3, [d])
    assert pushed[0].version == 3 and pushed[0].diagnostics == [d]
    push.clear("file:///a.py")
    assert pushed[-1].diagnostics == []

    pulled = []
    pull = DiagnosticsStore(publish=pulled.append, pull=True)

    async def scenario():
        waiter = asyncio.ensure_future(pull.wait_for("file:///b.py", 1, timeout=2))
        await asyncio.sleep(0)
        pull.set("file:///b.py", 1, [d])
        entry = await waiter
        assert entry.version == 1 and entry.diagnostics == [d]
        first = pull.report(entry, None)
        assert first.kind == "full"
        assert pull.report(entry, first.result_id).kind == "unchanged"

    asyncio.run(scenario())
    assert pulled == []


def test_language_detection_is_cheap_and_handles_untitled():
    assert engine.language_of("/k/x.cu", "cuda-cpp", "") == "cuda"
    assert engine.language_of(None, "cuda-cpp", "") == "cuda"
    assert engine.language_of("/k/util.py", "python", "import numpy\n") is None
    assert engine.language_of(None, "python", "from neuronxcc import nki\n") == "nki"
    assert engine.check_path(None, "untitled:Untitled-1", "nki") == "Untitled-1.py"


def test_a_raising_rule_becomes_an_error_not_an_exception(monkeypatch):
    rules = pytest.importorskip("nki_assist.rules.nki.run")

    def boom(*args, **kwargs):
        raise ZeroDivisionError("rule bug")

    monkeypatch.setattr(rules, "run_nki_rules", boom)
    text = "import neuronxcc.nki as nki\n\n@nki.jit\ndef k(a):\n    return a\n"
    result = engine.analyze("file:///k_nki.py", "/nonexistent/k_nki.py", "python", 1, text, Settings())
    assert result.findings == [] and "ZeroDivisionError: rule bug" in result.error


def test_port_spec_lookup(tmp_path):
    (tmp_path / "port.toml").write_text("[port]\n")
    sub = tmp_path / "kernels"
    sub.mkdir()
    (sub / "other.toml").write_text('[port]\nnki = "kernels/gemm_nki.py"\n')
    assert find_port_spec(str(sub / "gemm_nki.py"), None, [str(tmp_path)]) == sub / "other.toml"
    assert find_port_spec(str(sub / "x_nki.py"), None, [str(tmp_path)]) == tmp_path / "port.toml"
    assert find_port_spec(str(sub / "x_nki.py"), "kernels/other.toml", [str(tmp_path)]) == sub / "other.toml"
    assert find_port_spec(None, None, [str(tmp_path)]) is None


def test_review_kwargs_never_run_the_simulator_unless_enabled():
    def with_switch(spec, *, target=None, llm="none", progress=None, cancel=None, simulate=True):
        pass

    def without_switch(spec, *, target=None, llm="none", progress=None, cancel=None):
        pass

    cancel = threading.Event()
    kw = review_kwargs(with_switch, Settings(), "trn2", None, cancel)
    assert kw == {"target": "trn2", "llm": "none", "progress": None, "cancel": cancel, "simulate": False}
    assert review_kwargs(with_switch, Settings(execution_enabled=True), None, None, None)["simulate"] is True
    with pytest.raises(ReviewRefused, match="execution.enabled"):
        review_kwargs(without_switch, Settings(), None, None, None)
    assert "simulate" not in review_kwargs(without_switch, Settings(execution_enabled=True), None, None, None)


def test_review_kwargs_with_the_real_review_options():
    review = pytest.importorskip("nki_assist.review")
    if not hasattr(review, "ReviewOptions"):
        pytest.skip("review_port takes flat keywords here")
    off = review_kwargs(review.review_port, Settings(), "trn3", None, None)
    assert off["options"].run is False and off["options"].target == "trn3" and off["options"].llm == "none"
    on = review_kwargs(review.review_port, Settings(execution_enabled=True, llm_provider="openai", llm_model="m"),
                       None, None, None)
    assert on["options"].run is True and (on["options"].llm, on["options"].model) == ("openai", "m")


def test_hover_and_lens_reuse_the_checks_parse(monkeypatch):
    import nki_assist.parse.nki as nki_parser

    calls = []
    real = nki_parser.parse_nki
    monkeypatch.setattr(nki_parser, "parse_nki", lambda text, path, **kw: calls.append(path) or real(text, path, **kw))
    text = ("import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(a):\n"
            "    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n    return a\n")
    analysis = engine.analyze("file:///w/k.py", "/w/k.py", "python", 1, text, Settings())
    engine.parse_for_editor(analysis, "/w/k.py", text)
    assert len(calls) == 1
    assert analysis.resources["k"]["psum_banks"] == 1


def test_warm_up_checks_a_tiny_kernel_and_never_raises(monkeypatch):
    import nki_assist.check as check  # the public entry the server calls

    seen = []
    real = check.check_text
    monkeypatch.setattr(check, "check_text", lambda path, text, options, **kw: seen.append(
        real(path, text, options, **kw)) or seen[-1])
    assert engine.warm_up() >= 0
    (result,) = seen
    assert result.status == "checked" and result.language == "nki" and result.findings == []

    def broken(*args, **kwargs):
        raise RuntimeError("engine exploded")

    monkeypatch.setattr(check, "check_text", broken)
    assert engine.warm_up() >= 0  # a broken engine is reported when a real file is checked, not here
