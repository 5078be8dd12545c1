"""A small, deterministic stand-in for the nki-assist engine, for language-server tests.

`install()` puts a fake `nki_assist.check` package (its two entry points), `nki_assist.parse.nki`, `nki_assist.review.pipeline` and
`nki_assist.report.markdown` modules into sys.modules, so the server's behaviour (positions, fixes,
hover numbers, progress) is tested independently of the real rules. Fake findings:
- every `BAD` token -> NA100 at that token (column in characters, so emoji before it matter);
- `for i in nl.affine_range(...):  # carried` -> NA100 with a mechanical edit to sequential_range.
`# noqa: NA100` on a line suppresses its findings, like the real engine.
"""

from __future__ import annotations

import math
import os
import re
import sys
import time
import types as pytypes
from dataclasses import dataclass, field

from nki_assist.findings import Edit, Finding, Fix, RelatedLocation, Severity

DTYPE = {"float32": 4, "bfloat16": 2, "float16": 2, "int8": 1}
_ALLOC = re.compile(r"(?P<name>\w+)\s*=\s*nl\.ndarray\(\((?P<p>\d+),\s*(?P<f>\d+)\),\s*dtype=nl\.(?P<dtype>\w+),"
                    r"\s*buffer=nl\.(?P<buffer>\w+)\)")
_LOOP = re.compile(r"for\s+(?P<var>\w+)\s+in\s+nl\.(?P<kind>\w+_range)\((?P<n>\d+)\)")
_MATMUL = re.compile(r"nisa\.nc_matmul\((?P<args>[^)]*)\)")


@dataclass
class CheckOptions:
    target: str = "trn2"
    select: list | None = None
    ignore: list = field(default_factory=list)
    fail_on: str = "error"


def _finding(path, line, col, end_col, message, **extra):
    return Finding(rule="NA100", name="unused-suppression", category="unused-suppression",
                   severity=Severity.WARNING, file=path, line=line, column=col, end_column=end_col,
                   message=message, fix="Use nl.sequential_range.", **extra)


def check_source(path, text, options):
    if os.environ.get("FAKE_CHECK_SLEEP"):
        time.sleep(float(os.environ["FAKE_CHECK_SLEEP"]))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if re.search(r"#\s*noqa:\s*[\w, ]*NA100", line):
            continue
        for m in re.finditer(r"\bBAD\b", line):
            out.append(_finding(path, n, m.start() + 1, m.end() + 1, "BAD token here",
                                related=[RelatedLocation(file="kernel.cu", line=7, message="CUDA original")]))
        m = re.search(r"nl\.affine_range", line)
        if m and "# carried" in line:
            edit = Edit(line=n, column=m.start() + 1, end_line=n, end_column=m.end() + 1,
                        old_text="nl.affine_range", content="nl.sequential_range")
            fix = Fix(message="Use nl.sequential_range (carried dependency)", applicability="safe", edits=[edit])
            out.append(_finding(path, n, m.start() + 1, m.end() + 1, "carried dependency in affine_range",
                                autofix=fix))
    return out


def parse_nki(text, path):
    kernels, current = [], None
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        m = re.match(r"def (\w+)\(", line)
        if m:
            current = pytypes.SimpleNamespace(name=m.group(1), line=n, end_line=n, allocations=[], loops=[],
                                              matmuls=[], calls=[])
            kernels.append(current)
            continue
        if current is None:
            continue
        if line.strip():
            current.end_line = n
        if (m := _ALLOC.search(line)):
            p, f, dtype = int(m["p"]), int(m["f"]), m["dtype"]
            current.allocations.append(pytypes.SimpleNamespace(
                name=m["name"], line=n, col=m.start() + 1, end_line=n, end_col=m.end() + 1, shape=(p, f),
                dtype=dtype, buffer=m["buffer"], bytes_per_partition=f * DTYPE[dtype]))
        if (m := _LOOP.search(line)):
            current.loops.append(pytypes.SimpleNamespace(var=m["var"], kind=f"nl.{m['kind']}",
                                                         trip_count=int(m["n"]), trip_expr=m["n"], line=n,
                                                         col=m.start() + 1, end_line=n))
        if (m := _MATMUL.search(line)):
            call = pytypes.SimpleNamespace(api="nisa.nc_matmul", line=n, col=m.start() + 1, end_line=n,
                                           end_col=m.end() + 1)
            current.matmuls.append(pytypes.SimpleNamespace(
                call=call, dst=None, stationary=pytypes.SimpleNamespace(text="t", shape=(128, 128), dtype="bfloat16"),
                moving=pytypes.SimpleNamespace(text="t", shape=(128, 1024), dtype="bfloat16")))
    return pytypes.SimpleNamespace(kernels=kernels, path=path)


def kernel_resources(kernel, target):
    sbuf = sum(a.bytes_per_partition for a in kernel.allocations if a.buffer == "sbuf")
    psum = [a.bytes_per_partition for a in kernel.allocations if a.buffer == "psum"]
    return {"sbuf_peak_bytes_per_partition": sbuf,
            "sbuf_percent": 100.0 * sbuf / target.sbuf_usable_bytes_per_partition,
            "psum_banks": sum(max(1, math.ceil(b / target.psum_bank_bytes)) for b in psum),
            "psum_bytes_per_partition": sum(psum)}


def review_port(spec_path, *, target=None, llm="none", progress=None, cancel=None, simulate=False):
    """Fake review: 5 steps of FAKE_REVIEW_STEP seconds, reporting progress, honouring cancel."""
    from nki_assist.schema import Assessment, Performance, PortInfo, Review

    step = float(os.environ.get("FAKE_REVIEW_STEP", "0.05"))
    for i in range(5):
        if cancel is not None and cancel.is_set():
            break
        if progress:
            progress(f"stage {i + 1} of 5", 20.0 * i)
        time.sleep(step)
    here = os.path.dirname(spec_path)
    findings = []
    diff = os.path.join(here, "proven.diff")  # a port with a proven fix: the review carries it as the diagnosis
    if os.path.isfile(diff):
        text = open(diff, encoding="utf-8").read()
        line = int(text.split("@@ -")[1].split(",")[0].split(" ")[0])
        findings.append(Finding(rule="SIM112", name="sim-output-not-written", category="uninitialized-read",
                                severity=Severity.ERROR, source="simulation", file="kernel_nki.py", line=line,
                                message="output partly written",
                                evidence={"diagnosis": {"cause": "store offset", "diff": text, "proven": True}}))
    return Review(port=PortInfo(name="fake", target=target or "trn2", nki="kernel_nki.py", spec=spec_path),
                  findings=findings,
                  performance=Performance(mfu_estimated_percent=23.4, bottleneck="dma-overhead"),
                  assessment=Assessment(verdict="revise", summary=f"simulate={simulate} llm={llm} in {here}"))


def render_markdown(review):
    return f"# Review of {review.port.name}\n\nverdict: {review.assessment.verdict}\n\n{review.assessment.summary}\n"


def install(review: bool = True) -> None:
    import nki_assist

    from nki_assist.check.autofix import apply_fixes, selected_fixes  # the real fixes: they only edit text

    check = pytypes.ModuleType("nki_assist.check")  # the whole package: only the fake entry points exist
    check.CheckOptions, check.check_source = CheckOptions, check_source
    check.apply_fixes, check.selected_fixes = apply_fixes, selected_fixes
    sys.modules["nki_assist.check"] = check
    nki_assist.check = check
    nki = pytypes.ModuleType("nki_assist.parse.nki")
    nki.parse_nki, nki.kernel_resources = parse_nki, kernel_resources
    sys.modules["nki_assist.parse.nki"] = nki
    if review:
        rev = pytypes.ModuleType("nki_assist.review.pipeline")
        rev.review_port = review_port
        md = pytypes.ModuleType("nki_assist.report.markdown")
        md.render_markdown = render_markdown
        sys.modules["nki_assist.review.pipeline"] = rev
        sys.modules["nki_assist.report.markdown"] = md
    else:  # the review engine is not installed
        sys.modules["nki_assist.review.pipeline"] = None  # makes `import nki_assist.review.pipeline` raise ImportError
