"""The HTML report as a reader meets it: failures (NaN) shown as failures, markdown rendered, each
finding's text once under an anchor, locations as links, a table of contents that resolves; and a
headless-Chromium screenshot of the example port's report (skipped without Chromium)."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nki_assist.feedback import draft_assessment
from nki_assist.findings import Finding, RelatedLocation, prioritize
from nki_assist.numerics.plots import error_points, failure_caption, layout
from nki_assist.report.html import render_html
from nki_assist.report.markdown import render_markdown
from nki_assist.report.safe import md_safe
from nki_assist.schema import Numerics, PortInfo, Review

REPO = Path(__file__).resolve().parents[2]
NKI, CUDA = "gemm_nki.py", "sgemm.cu"


def row(size, scenario, mean_abs, frac=0.0, nan=0, passed=True, against="reference"):
    return {"size": size, "scenario": scenario, "against": against, "output": 0, "dtype": "float32",
            "max_abs": "inf" if nan else 1e-5, "max_rel": 1e-4, "max_ulp": 4.0, "mean_abs": mean_abs,
            "mismatch_fraction": frac, "nan_actual": nan, "inf_actual": 0, "worst_index": [0, 0], "passed": passed}


def numerics() -> Numerics:
    # The ragged size fails with 24,064 NaN; its mean abs error over the finite elements (3.0e-7)
    # is *smaller* than the aligned size's: exactly what a plot must not present as an improvement.
    return Numerics(sizes=[{"name": "aligned", "K": 512, "reduction_length": 512},
                           {"name": "ragged", "K": 256, "reduction_length": 256}],
                    scenarios=["reference", "trainium", "trainium-fp32", "gpu-model"],
                    matrix=[row("aligned", "trainium", 6.7e-7), row("aligned", "trainium-fp32", 6.7e-7),
                            row("aligned", "gpu-model", 9.1e-7),
                            row("ragged", "trainium", 3.0e-7, 0.2686, 24064, False),
                            row("ragged", "trainium-fp32", 3.0e-7, 0.2686, 24064, False),
                            row("ragged", "gpu-model", 5.9e-7),
                            row("ragged", "trainium", 4.3e-7, 0.2686, 24064, False, against="gpu-model")],
                    reduction_symbol="K", tolerance={"rtol": 0.02, "atol": 0.01})


def review(spec: str | None = None) -> Review:
    fs = prioritize([
        Finding(rule="SIM112", name="sim-output-not-written", category="uninitialized-read", severity="error",
                source="simulation", file=NKI, line=24,
                message="kernel output `out[128, 700]` is only partly written: 24064 of 89600 elements."),
        Finding(rule="MIG101", name="cuda-bounds-guard-dropped", category="missing-boundary-mask",
                severity="warning", source="migration", file=NKI, line=26,
                message="The CUDA kernel guards its tail (`row < M && col < N`, line 70); the port's loop does not.",
                related=[RelatedLocation(file=CUDA, line=70, message="bounds guard")]),
        Finding(rule="NKI502", name="deprecated-loop-iterator", category="deprecated-api", severity="info",
                file=NKI, line=27, message="`nl.affine_range` is a deprecated alias of `range` <b>here</b>."),
    ])
    r = Review(port=PortInfo(name="gemm", target="trn2", nki=NKI, cuda=CUDA, spec=spec), findings=fs,
               numerics=numerics())
    r.assessment = draft_assessment(r)
    return r


def parse(html: str) -> ET.Element:
    return ET.fromstring(html.split("\n", 1)[1])


def text_of(el: ET.Element) -> str:
    return "".join(el.itertext())


def test_nan_outputs_are_failures_in_the_plot_data_and_caption():
    points = {(p.size, p.scenario): p for p in error_points(numerics())}
    ragged = points[("ragged", "trainium")]
    assert ragged.failed and ragged.nonfinite == 24064 and ragged.outside == pytest.approx(0.2686)
    assert not points[("ragged", "gpu-model")].failed
    assert ("ragged", "trainium") in points and len(points) == 6  # the vs-gpu-model row is not a scenario
    lay = layout(list(points.values()))
    finite_ys = [y for (size, name), (_, y) in lay.xy.items() if not points[(size, name)].nonfinite]
    # the NaN point sits in the band above every finite error, not at its 3e-7 finite mean
    assert lay.xy[("ragged", "trainium")][1] == lay.band > max(finite_ys)
    # coinciding scenarios (trainium == trainium-fp32 everywhere) keep distinct x positions
    assert lay.xy[("aligned", "trainium")][0] != lay.xy[("aligned", "trainium-fp32")][0]
    assert failure_caption(list(points.values())) == (
        "FAILS: ragged / trainium (26.9% of elements outside tolerance, 24,064 NaN/Inf); "
        "ragged / trainium-fp32 (26.9% of elements outside tolerance, 24,064 NaN/Inf).")


def test_a_failed_run_without_numbers_is_a_failure_too():
    n = numerics()
    n.matrix.append({"size": "ragged", "scenario": "trainium-sr", "against": "reference", "output": None,
                     "passed": False, "note": "timeout: exceeded 60 s"})
    p = next(p for p in error_points(n) if p.scenario == "trainium-sr")
    assert p.failed and p.mean_abs is None and layout([p]).xy[("ragged", "trainium-sr")][1] == layout([p]).band
    assert "ragged / trainium-sr (100% of elements outside tolerance, timeout: exceeded 60 s)" in failure_caption([p])


def test_numerics_plot_is_a_png_with_the_failure_in_its_caption():
    pytest.importorskip("matplotlib")
    from nki_assist.numerics.plots import error_plot

    png = error_plot(numerics())
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    root = parse(render_html(review(), plots={"numerics.png": png}))
    (fig,) = root.iter("figure")
    assert "ragged / trainium (26.9% of elements outside tolerance, 24,064 NaN/Inf)" in text_of(fig.find("figcaption"))
    assert fig.find("figcaption/span").get("class") == "fails"
    assert fig.find("img").get("alt").startswith("numerics.png: FAILS: ragged / trainium")


def test_markdown_is_rendered_and_raw_html_stays_text():
    html = render_html(review())
    root = parse(html)
    items = [s for s in root.iter("section")]
    assert items and all("`" not in text_of(s) for s in items)  # backticks became <code>
    codes = [c.text for c in root.iter("code")]
    assert "row < M && col < N" in codes and "nl.affine_range" in codes
    assert "<b>here</b>" not in html and "&lt;b&gt;here&lt;/b&gt;" in html


def test_each_finding_once_with_an_anchor_and_the_table_points_to_it():
    r = review()
    root = parse(render_html(r))
    body = text_of(root.find("body"))
    for f in r.findings:
        plain = f.message.replace("`", "")  # backticks render as <code>; raw HTML stays text
        assert body.count(plain) == 1, f.id
        (li,) = [el for el in root.iter("li") if el.get("id") == f.id]
        assert plain in text_of(li)
        (tr,) = [el for el in root.iter("tr") if el.get("id") == f"row-{f.id}"]
        assert tr.find("td/a").get("href") == f"#{f.id}" and "described in item" in text_of(tr)
    md = render_markdown(r)
    assert all(md.count(md_safe(f.message)) == 1 for f in r.findings)  # raw HTML escaped in markdown too
    assert "<b>here</b>" not in md and "&lt;b>here&lt;/b>" in md


def test_locations_are_links_to_the_source(tmp_path):
    spec = tmp_path / "port" / "port.toml"
    root = parse(render_html(review(spec=str(spec))))
    hrefs = {a.text: a.get("href") for a in root.iter("a") if a.text}
    base = (tmp_path / "port").resolve().as_uri()
    assert hrefs["gemm_nki.py:24"] == f"{base}/gemm_nki.py#L24"
    assert hrefs["sgemm.cu:70"] == f"{base}/sgemm.cu#L70"  # related CUDA line inside the text
    assert hrefs[NKI] == f"{base}/gemm_nki.py"  # the header's sources
    root = parse(render_html(review(spec=str(spec)), source_url="https://example.org/repo/blob/abc/port/"))
    hrefs = {a.text: a.get("href") for a in root.iter("a") if a.text}
    assert hrefs["gemm_nki.py:24"] == "https://example.org/repo/blob/abc/port/gemm_nki.py#L24"


def test_table_of_contents_resolves():
    root = parse(render_html(review()))
    nav = root.find(".//nav")
    assert nav.get("class") == "toc"
    ids = {el.get("id") for el in root.iter() if el.get("id")}
    targets = [a.get("href") for a in nav.iter("a")]
    assert targets[0] == "#feedback" and all(t[1:] in ids for t in targets)
    titles = [text_of(a) for a in nav.iter("a")]
    assert "Findings" in titles and "Numerics" in titles
    assert not any(re.search(r"\.py:\d", t) for t in titles)  # short: no location lists


@pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("google-chrome") is None,
                    reason="no headless Chromium (apt-get install chromium)")
def test_example_report_screenshot(tmp_path):
    """The documented script renders the example port's report; the failing ragged size is there."""
    pytest.importorskip("matplotlib")
    from nki_assist.cli import main
    from nki_assist.report.screenshot import screenshot

    html = tmp_path / "review.html"
    assert main(["review", str(REPO / "examples/gemm_bias_relu/port.toml"), "--format", "html", "-o", str(html),
                 "-q", "--fail-on", "never"]) == 0
    page = html.read_text(encoding="utf-8")
    assert "FAILS: ragged / trainium" in page
    png = screenshot(html, tmp_path / "review.png", width=1000, height=3000)
    from PIL import Image

    with Image.open(png) as im:
        assert im.size == (1000, 3000)
        colors = im.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 50  # rendered content, not a blank page
