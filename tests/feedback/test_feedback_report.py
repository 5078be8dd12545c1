"""Markdown and HTML review reports: sections, priorities, cited ids, well-formed self-contained HTML."""

import base64
import re
import struct
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser

import pytest
from feedback_builders import f, review

from nki_assist.feedback import draft_assessment
from nki_assist.report.html import render_html
from nki_assist.report.markdown import render_markdown


def tiny_png(w=2, h=2) -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * w for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def reviewed(**kw):
    r = review(**kw)
    r.assessment = draft_assessment(r)
    return r


def test_markdown_sections_and_priorities():
    md = render_markdown(reviewed())
    heads = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert heads[0] == "# nki-assist review: gemm_bias_relu (trn2)"
    assert [h for h in heads if h.startswith("## ")] == [
        "## Prioritized feedback", "## Rubric", "## Findings", "## Numerics", "## Performance"]
    items = [h for h in heads if h.startswith("### ")]
    assert len(items) == 5 and items[0].startswith("### 1. PSUM tile exceeds one bank")
    assert items[1].startswith("### 2. Epilogue work of the CUDA kernel is missing")
    assert "**Verdict: BLOCK** · 2 errors, 3 warnings, 1 info · drafter: deterministic" in md
    assert "*error (must fix) · memory-hierarchy · findings F1, F2*" in md
    assert "*info (nit) · numerical-accuracy · findings F6*" in md
    for section in ("**What:**", "**Why it matters on Trainium:**", "**Fix:**", "**How to confirm (profiling rationale):**"):
        assert md.count(section) == 5
    assert "| memory-hierarchy | 0/4 |" in md
    # every finding id is in the findings table and cited by an item
    for i in range(1, 7):
        assert re.search(rf"^\| F{i} \| ", md, re.M)
        assert re.search(rf"findings [F0-9, ]*\bF{i}\b", md)
    assert "estimated time 812 us" in md and "bottleneck: dma-overhead" in md
    assert "| aligned | normal | 0.031 | no |" in md
    assert md.rstrip().endswith("schema: nki-assist/review@1</sub>")


def test_markdown_refuses_an_undrafted_review():
    """Renderers only format; drafting belongs to review.py (issue 13)."""
    r = review([], numerics=False, perf=False)
    assert r.assessment is None
    with pytest.raises(ValueError, match="no assessment"):
        render_markdown(r)


def test_markdown_escapes_pipes():
    fs = [f(rule="P1", name="x", category="small-dma", severity="warning", line=3, message="a | b", file="k|x.py")]
    r = review(fs, numerics=False, perf=False)
    r.assessment = draft_assessment(r)
    md = render_markdown(r)
    assert "| k\\|x.py:3 | described in item 1 |" in md and "**Verdict: REVISE**" in md
    assert md.count("a | b") == 1  # the message once, in its item
    assert "## Notes" in md and "- numerics: no port spec, kernel not run" in md
    assert "## Numerics\n\n*Not available: numerics: no port spec, kernel not run*" in md
    assert "## Performance\n\n*Not available: no estimate: the kernel was not executed" in md


def test_markdown_fallback_note():
    r = reviewed()
    r.assessment = draft_assessment(r, llm="openai")  # no key: fallback without network
    md = render_markdown(r)
    assert "drafter: fallback" in md and "> **Note:** The LLM draft was not used (OPENAI_API_KEY is not set" in md


def test_markdown_clean_review():
    md = render_markdown(reviewed(findings=[]))
    assert "**Verdict: APPROVE** · no findings" in md
    assert "Nothing to change" in md and "None." in md


class _Balance(HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass  # <img ... /> opens and closes itself

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)


def test_html_well_formed_with_png():
    png = tiny_png()
    html = render_html(reviewed(), plots={"error_vs_K": png, "roofline": b"GIF89a not a png"})
    root = ET.fromstring(html.split("\n", 1)[1])  # well-formed XML after the doctype
    assert root.tag == "html"
    p = _Balance()
    p.feed(html)
    assert p.errors == [] and p.stack == []
    imgs = root.findall(".//img")
    assert len(imgs) == 1 and imgs[0].get("alt") == "error_vs_K"
    src = imgs[0].get("src")
    assert src.startswith("data:image/png;base64,") and base64.b64decode(src.split(",", 1)[1]) == png
    assert "plot 'roofline' skipped: not PNG data" in html
    assert not re.search(r"src=\"(https?:)?//", html) and "<script" not in html  # self-contained
    sections = [s for s in root.iter("section")]
    assert [s.get("id") for s in sections] == [f"item-{i}" for i in range(1, 6)]
    assert root.find(".//span[@class='verdict v-block']").text == "BLOCK"
    meta = sections[0].find("p[@class='meta']")
    assert [a.get("href") for a in meta.iter("a")] == ["#F1", "#F2"]
    # each finding's text once, under its id: in the item that describes it; the table points there
    ids = [el.get("id") for el in root.iter() if el.get("id")]
    for i in range(1, 7):
        assert ids.count(f"F{i}") == 1 and ids.count(f"row-F{i}") == 1
        (li,) = [el for el in root.iter("li") if el.get("id") == f"F{i}"]
        (row,) = [el for el in root.iter("tr") if el.get("id") == f"row-F{i}"]
        assert "described in item" in "".join(row.itertext())
        assert row.find("td/a").get("href") == f"#F{i}"
    messages = [x.message for x in reviewed().findings]
    text = "".join(root.itertext())
    assert all(text.count(m) == 1 for m in messages)


def test_html_escapes_untrusted_text():
    fs = [f(rule="P1", name="x", category="small-dma", severity="warning", line=3,
            message="<script>alert('x')</script> & more")]
    html = render_html(reviewed(findings=fs))
    assert "<script>" not in html and "&lt;script&gt;" in html
    ET.fromstring(html.split("\n", 1)[1])
