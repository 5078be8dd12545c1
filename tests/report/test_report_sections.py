"""Numerics and performance sections of the markdown/HTML review: the numbers an expert reads."""

import base64
import re
import struct
import xml.etree.ElementTree as ET
import zlib

from nki_assist.findings import Finding, prioritize
from nki_assist.report.html import render_html
from nki_assist.report.markdown import render_markdown
from nki_assist.report.sections import num, numerics_section, performance_section
from nki_assist.schema import Assessment, EngineTime, Numerics, Performance, PortInfo, Review

NKI = "kernels/gemm_nki.py"


def png(tag: int) -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"\x00" + bytes([tag, 0, 0])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def cmp_row(size, scenario, against, dtype, max_abs, max_rel, ulp, frac, nan=0, passed=True, idx=(0, 1)):
    return {"size": size, "scenario": scenario, "against": against, "output": 0, "dtype": dtype,
            "max_abs": max_abs, "max_rel": max_rel, "max_ulp": ulp, "mean_abs": 1e-7,
            "mismatch_fraction": frac, "nan_actual": nan, "inf_actual": 0, "worst_index": list(idx),
            "passed": passed}


def numerics() -> Numerics:
    return Numerics(
        sizes=[{"name": "aligned", "M": 256, "K": 512, "N": 1024, "reduction_length": 512},
               {"name": "ragged", "M": 128, "K": 256, "N": 700, "reduction_length": 256}],
        scenarios=["reference", "trainium", "trainium-fp32", "gpu-model"],
        matrix=[
            cmp_row("ragged", "trainium", "reference", "float32", "inf", 7.8e-5, 3072.0, 0.26857142, nan=24064,
                    passed=False, idx=(0, 512)),
            cmp_row("aligned", "gpu-model", "reference", "float64", 2.97e-5, 3.3977e-4, 2987149754368.0, 0.0),
            cmp_row("aligned", "trainium", "reference", "float32", 1.6689e-5, 2.1308e-4, 4168.0, 0.0),
            cmp_row("aligned", "trainium-fp32", "reference", "float32", 1.6689e-5, 2.1308e-4, 4168.0, 0.0),
            cmp_row("aligned", "trainium", "gpu-model", "float32", 3.05e-5, 5.5267e-4, 6144.0, 0.0),
            {"size": "ragged", "scenario": "trainium-fp32", "against": "reference", "output": None,
             "passed": False, "note": "timeout: exceeded 60 s"},
            cmp_row("ragged", "gpu-model", "reference", "float64", 1.67e-5, 1.9027e-4, 1614907703296.0, 0.0),
        ],
        gpu_model_precision="float32", reduction_symbol="K",
        growth=[{"scenario": "trainium", "lengths": [512, 4096, 65536], "errors": [1e-5, 8e-5, 1e-3],
                 "slope": 0.987, "r2": 0.998}],
        tolerance={"rtol": 0.02, "atol": 0.01}, notes=["size ragged: N=700 is not a multiple of 512"],
        seconds=7.0)


def performance(measured: bool = False) -> Performance:
    extra = dict(
        label="estimate", status="ok", bottleneck_engine="dma", size="aligned",
        bounds={"perfect_overlap_us": 56.019, "no_overlap_us": 163.699, "estimate_us": 57.319,
                "prologue_us": 2.881, "epilogue_us": 2.505},
        hfu_estimated_percent=6.0, mbu_estimated_percent=17.73, useful_flops=270532608.0,
        tensor_flops=270532608.0, transpose_flops=0,
        hbm={"read_bytes": 2629632, "write_bytes": 1048576, "unique_read_bytes": 1314816, "redundancy": 2.0,
             "min_bytes": 2363392},
        arithmetic_intensity=73.55, min_arithmetic_intensity=114.468,
        roofline={"peak_flops": 7.86e13, "hbm_bw_bytes_per_s": 3.62e11, "ridge_flops_per_byte": 217.127,
                  "attainable_flops": 2.6625e13, "achieved_flops": 4.7198e12, "region": "memory",
                  "percent_of_roof": 17.727},
        assumptions=["Estimate, not a measurement: trn2 numbers from hardware.py.",
                     "DMA fixed latency 1.3 us per transfer is hidden by queueing."],
        notes=["dependencies inside the loop body are not modelled"],
        findings=[{"rule": "PERF101", "name": "estimated-redundant-dma", "est_speedup": 1.81, "line": 35,
                   "focus_metric": "redundant_dma_ratio", "value": 2.0},
                  {"rule": "PERF102", "name": "dma-overhead-small-transfers", "est_speedup": 2.31, "line": 31,
                   "focus_metric": "bytes_per_descriptor", "value": 640.0}],
    )
    if measured:
        extra["measured_time_us"] = 71.4
        extra["comparison"] = [{"metric": "time_us", "estimate": 57.319, "measured": 71.4,
                                "estimate_over_measured": 0.80279},
                               {"metric": "dma_busy_us", "estimate": 56.019, "measured": None}]
    return Performance(
        estimated_time_us=57.319, bottleneck="dma-overhead-bound", mfu_estimated_percent=6.0,
        hbm_read_bytes=2629632, hbm_write_bytes=1048576,
        engines={"tensor": EngineTime(busy_us=10.24, instructions=36, overhead_us=0.0),
                 "vector": EngineTime(busy_us=2.133, instructions=4, overhead_us=0.0),
                 "gpsimd": EngineTime(busy_us=0.0, instructions=0, overhead_us=0.0),
                 "dma": EngineTime(busy_us=56.019, instructions=72, overhead_us=41.261, bytes=3678208,
                                   transfers=4612)},
        measured={"source": "profile.json", "time_us": 71.4} if measured else None, **extra)


def findings() -> list[Finding]:
    return prioritize([
        Finding(rule="NUM103", name="ragged-size-failure", category="missing-boundary-mask", severity="error",
                source="numerics", file=NKI, line=26,
                message="Passes on aligned but on ragged size ragged (N=700) 26.9% of elements are wrong.\nmore"),
        Finding(rule="PERF101", name="estimated-redundant-dma", category="redundant-dma", severity="warning",
                source="cost-model", file=NKI, line=35, message="HBM loads are 2.0x redundant.", est_speedup=1.81,
                evidence={"focus_metric": "redundant_dma_ratio", "value": 2.0,
                          "confirm_with": {"metric": "hbm_reload_bytes", "direction": "decrease toward 0"}}),
        Finding(rule="PERF102", name="dma-overhead-small-transfers", category="small-dma", severity="warning",
                source="cost-model", file=NKI, line=31, message="640 B per descriptor.", est_speedup=2.31,
                evidence={"focus_metric": "bytes_per_descriptor", "value": 640.0}),
        Finding(rule="NKI203", name="loop-trip-floor", category="missing-boundary-mask", severity="warning",
                file=NKI, line=27, message="N // 512 drops the tail."),
    ])


def review(**kw) -> Review:
    kw.setdefault("numerics", numerics())
    kw.setdefault("performance", performance())
    kw.setdefault("findings", findings())
    return Review(port=PortInfo(name="gemm", target="trn2", nki=NKI), assessment=Assessment(
        verdict="block", summary="The ragged tail is not handled."), **kw)


def md_table(md: str, title: str) -> list[list[str]]:
    """Rows (cells split) of the markdown table that follows **title.**"""
    block = md.split(f"**{title}.**", 1)[1].split("\n\n", 2)[1]
    return [[c.strip() for c in ln.strip("|").split(" | ")] for ln in block.splitlines()[2:]]


def test_number_format_three_significant_digits():
    assert num(2.1308e-4) == "2.13e-4" and num(0.02) == "0.02" and num(163.699) == "164"
    assert num(56.019, zeros=True) == "56.0" and num(6.0, zeros=True) == "6.00"
    assert num("inf") == "inf" and num(float("nan")) == "NaN" and num(4168.0) == "4168"
    assert num(2987149754368.0) == "2.99e12" and num(None) == "—"


def test_markdown_scenario_matrix_cells():
    md = render_markdown(review())
    rows = md_table(md, "Scenarios x sizes")
    head = md.split("**Scenarios x sizes.**", 1)[1].split("\n\n", 2)[1].splitlines()[0]
    assert head == ("| size | trainium vs reference | trainium-fp32 vs reference | gpu-model vs reference | "
                    "gap: trainium vs gpu-model |")
    assert [r[0] for r in rows] == ["aligned", "ragged"]  # spec order, not matrix order
    assert rows[0][1:] == ["PASS 2.13e-4", "PASS 2.13e-4", "PASS 3.4e-4", "PASS 5.53e-4"]
    assert rows[1][1] == "FAIL 26.9% (max abs inf, NaN 24064)"
    assert rows[1][2] == "FAIL (timeout: exceeded 60 s)"  # a run that did not finish
    assert rows[1][3] == "PASS 1.9e-4" and rows[1][4] == "—"  # no gap measured on ragged


def test_markdown_numerics_context():
    md = render_markdown(review())
    sec = md.split("## Numerics", 1)[1].split("## Performance", 1)[0]
    assert "**Tolerance:** rtol 0.02, atol 0.01" in sec
    assert "gpu-model = the reference with float32 accumulation" in sec
    assert md_table(md, "Sizes") == [["aligned", "M=256, K=512, N=1024", "512"],
                                     ["ragged", "M=128, K=256, N=700", "256"]]
    assert "| size | bindings | reduction length (K) |" in sec
    assert "- trainium: slope 0.987 (r² 0.998) over K = 512..65536 (3 lengths); above 0.8" in sec
    attribution = md_table(md, "Attribution")
    # no message column: the finding's text is in its item (and is not repeated here)
    assert attribution == [["F1", "NUM103 ragged-size-failure", "error", "line 26"]]
    assert "- size ragged: N=700 is not a multiple of 512" in sec


def test_float64_comparisons_have_no_ulp():
    md = render_markdown(review())
    head = md.split("**All comparisons.**", 1)[1].split("\n\n", 2)[1].splitlines()[0]
    cols = [c.strip() for c in head.strip("|").split(" | ")]
    ulp = cols.index("max ULP")
    rows = {(r[0], r[1], r[2]): r for r in md_table(md, "All comparisons")}
    assert rows[("aligned", "gpu-model", "reference")][3] == "float64"
    assert rows[("aligned", "gpu-model", "reference")][ulp] == "—"
    assert rows[("ragged", "gpu-model", "reference")][ulp] == "—"
    assert rows[("aligned", "trainium", "reference")][ulp] == "4168"
    assert "2.99e12" not in md and "1.61e12" not in md
    # only float64 comparisons: the column is dropped altogether
    n = numerics()
    n.matrix = [r for r in n.matrix if r.get("dtype") == "float64"]
    assert "max ULP" not in render_markdown(review(numerics=n))


def test_markdown_performance_bounds_engines_roofline():
    md = render_markdown(review())
    sec = md.split("## Performance", 1)[1]
    assert "estimate · bottleneck: dma-overhead-bound (engine: dma) · estimated time 57.3 us" in sec
    assert "**Kernel time bounds (estimate, size aligned).**" in sec
    bounds = md_table(md, "Kernel time bounds (estimate, size aligned)")
    assert [r[:2] for r in bounds] == [["perfect overlap", "56.0 us"], ["no overlap", "164 us"],
                                      ["estimate", "57.3 us"]]
    assert "(2.88 + 2.5 us)" in bounds[2][2] and {r[3] for r in bounds} == {"estimate"}
    engines = {r[0]: r for r in md_table(md, "Per-engine busy time")}
    assert engines["dma (bottleneck): 3.51 MiB in 4612 transfers"][1] == "█" * 20 + " 56.0 us"
    assert engines["tensor"][1] == "█" * 4 + " 10.2 us"  # 10.24 / 56.019 of 20 blocks
    assert engines["gpsimd"][1] == "0 us" and engines["tensor"][2] == "36"
    assert "- MFU 6.00% · HFU 6.00% · MBU 17.7%" in sec
    assert ("arithmetic intensity 73.5 FLOP/B (the problem's own 114) vs ridge 217 FLOP/B → memory-bound region; "
            "achieved 4.72 TFLOP/s = 17.7% of the attainable 26.6 TFLOP/s") in sec
    assert "unique read 1.25 MiB (2.00x redundant)" in sec
    assert "**Assumptions (2):**" in sec and "- dependencies inside the loop body are not modelled" in sec


def test_performance_findings_ranked_by_speedup():
    md = render_markdown(review())
    ranked = md_table(md, "Findings ranked by estimated speedup")
    ids = {f.rule: f.id for f in review().findings}
    assert [r[1] for r in ranked] == ["PERF102 dma-overhead-small-transfers", "PERF101 estimated-redundant-dma"]
    assert ranked[0] == [ids["PERF102"], "PERF102 dma-overhead-small-transfers", "line 31", "2.31x",
                         "bytes_per_descriptor = 640", "—"]
    assert ranked[1][3:] == ["1.81x", "redundant_dma_ratio = 2", "hbm_reload_bytes (decrease toward 0)"]
    # without findings in the review the ranking of the performance section is used, same order
    ranked2 = md_table(render_markdown(review(findings=[])), "Findings ranked by estimated speedup")
    assert [(r[0], r[1], r[3]) for r in ranked2] == [("—", "PERF102 dma-overhead-small-transfers", "2.31x"),
                                                     ("—", "PERF101 estimated-redundant-dma", "1.81x")]


def test_measured_profile_side_by_side():
    md = render_markdown(review(performance=performance(measured=True)))
    bounds = md_table(md, "Kernel time bounds (estimate + measured, size aligned)")
    assert bounds[-1][:2] == ["measured", "71.4 us"] and bounds[-1][3] == "measured"
    assert md_table(md, "Estimate vs measured") == [["time us", "57.3", "71.4", "0.803"],
                                                    ["dma busy us", "56.0", "—", "—"]]


def test_null_sections_say_why():
    r = review(numerics=None, performance=None,
               notes=["no port spec: the kernel was not executed, so numerics and performance are null"])
    md = render_markdown(r)
    reason = "no port spec: the kernel was not executed, so numerics and performance are null"
    assert f"## Numerics\n\n*Not available: {reason}*" in md
    assert f"## Performance\n\n*Not available: {reason}*" in md
    html = render_html(r)
    assert html.count(f"<p class=\"meta\">Not available: {reason}</p>") == 2
    r2 = review(performance=None, notes=["performance: no size ran to completion with a trace; no estimate"])
    assert "*Not available: performance: no size ran to completion with a trace; no estimate*" in render_markdown(r2)


def test_html_places_plots_in_their_sections():
    plots = {"numerics.png": png(1), "roofline.png": png(2), "engines.png": png(3), "extra.png": png(4)}
    html = render_html(review(performance=performance(measured=True)), plots=plots)
    root = ET.fromstring(html.split("\n", 1)[1])
    assert not re.search(r"src=\"(https?:)?//", html) and "<script" not in html  # nothing fetched
    body = list(root.find("body"))
    section_of, current = {}, None
    for el in body:
        if el.tag == "h2":
            current = el.text
        for img in el.iter("img"):
            name = img.get("alt").split(":", 1)[0]  # numerics.png's alt also names what fails
            section_of[name] = current
            assert base64.b64decode(img.get("src").split(",", 1)[1]) == plots[name]
    assert section_of == {"numerics.png": "Numerics", "engines.png": "Performance",
                          "roofline.png": "Performance", "extra.png": "Plots"}
    fails = [td.text for td in root.iter("td") if td.get("class") == "fail"]
    assert "FAIL 26.9% (max abs inf, NaN 24064)" in fails
    bars = [td for td in root.iter("td") if td.get("class") == "barcell"]
    assert [b.find("span").get("style") for b in bars][-1] == "width:160px"
    summaries = [d.find("summary").text for d in root.iter("details")]
    assert "Assumptions (2)" in summaries and "All comparisons (7 rows)" in summaries
    heads = [h.text for h in root.iter("h3")]
    assert heads.index("Kernel time bounds (estimate + measured, size aligned)") < heads.index("Estimate vs measured")


def test_html_ranked_table_order_and_generic_matrix():
    html = render_html(review())
    root = ET.fromstring(html.split("\n", 1)[1])
    tables = {}
    flat = list(root.find("body").iter())  # each h3 is followed by its table in document order
    for i, el in enumerate(flat):
        if el.tag == "h3":
            nxt = next((x for x in flat[i + 1:] if x.tag in ("table", "h3")), None)
            if nxt is not None and nxt.tag == "table":
                tables[el.text] = nxt
    assert "Findings ranked by estimated speedup" in tables
    rules = [tr.findall("td")[1].text for tr in tables["Findings ranked by estimated speedup"].iter("tr")
             if tr.findall("td")]
    assert rules == ["PERF102 dma-overhead-small-transfers", "PERF101 estimated-redundant-dma"]
    # a matrix without the scenario/against/passed structure is still shown, as a plain table
    sec = numerics_section(review(numerics=Numerics(matrix=[{"size": "s", "err": 0.5}])))
    assert sec.parts[0].title == "Results" and sec.parts[0].rows == [["s", "0.5"]]
    assert performance_section(review(performance=None)).missing.startswith("no estimate")


def test_degraded_data_renders_without_crash():
    n = Numerics(sizes=[{"name": "s"}], matrix=[
        {"size": "s", "scenario": "trainium", "against": "reference", "output": 0, "passed": False,
         "max_abs": None, "mismatch_fraction": None, "worst_index": None}],
        growth=["not a fit", {"scenario": "trainium", "slope": 0.5}], tolerance="loose")
    p = Performance(bounds="n/a", hbm=[1, 2], roofline={"region": "compute", "achieved_flops": "x"},
                    comparison=["bad", {"metric": "time_us", "estimate": 1.0}], findings={"rule": "PERF1"},
                    engines={"dma": EngineTime(busy_us=0.0)}, surprise_key={"a": 1.5})
    r = review(numerics=n, performance=p, findings=[])
    md = render_markdown(r)
    assert "| s | FAIL — (max abs —) |" in md  # unknown numbers stay visible as unknown
    assert "- trainium: slope 0.5 (r² —) over no lengths; consistent with fp32 accumulation (~0.5)" in md
    assert "→ compute-bound region" in md and "- surprise key: a=1.5" in md
    assert md_table(md, "Per-engine busy time") == [["dma", "0 us", "0", "—"]]
    ET.fromstring(render_html(r).split("\n", 1)[1])
