"""Jinja2 prompt templates (prompts/llm/*.md.j2) and the drafter text (prompts/drafter/*.toml).

Templates are rendered in a sandboxed, StrictUndefined environment. Findings go in as JSON data;
source code goes in only as fenced excerpts labelled UNTRUSTED, with anything that could close the
fence or the label neutralised.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from .. import taxonomy
from ..api.hardware import Target
from ..schema import Review
from .paths import data_dir
from .rubric import Rubric

EXCERPT_CONTEXT = 3  # lines of context either side of a cited line
MAX_EXCERPT_LINES = 40
MAX_EXCERPTS = 12


@cache
def prompt_version() -> str:
    data = tomllib.loads((data_dir("prompts") / "manifest.toml").read_text(encoding="utf-8"))
    return str(data["version"])


def _tojson_pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


@cache
def environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        loader=FileSystemLoader(str(data_dir("prompts"))),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["tojson_pretty"] = _tojson_pretty
    return env


@cache
def _compiled(template_source: str) -> Any:
    return environment().from_string(template_source)


def render_text(template_source: str, **context: Any) -> str:
    """Render one drafter snippet (a Jinja2 string from explanations.toml); compiled once."""
    return _compiled(template_source).render(**context).strip()


@cache
def explanations() -> dict[str, dict[str, dict[str, str]]]:
    path = data_dir("prompts") / "drafter" / "explanations.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {"categories": data.get("categories", {}), "rules": data.get("rules", {})}


# ---------------------------------------------------------------------------------------------
# Hardware facts the LLM may quote (and the grounding check accepts).


def hardware_facts(t: Target) -> list[tuple[str, str]]:
    kib = 1024
    return [
        ("partitions (SBUF and PSUM)", f"{t.partitions}"),
        ("SBUF per partition", f"{t.sbuf_bytes_per_partition // kib} KiB ({t.sbuf_bytes_per_partition} bytes)"),
        ("PSUM per partition", f"{t.psum_bytes_per_partition // kib} KiB in {t.psum_banks} banks"),
        ("PSUM bank", f"{t.psum_bank_bytes} bytes = {t.psum_bank_bytes // kib} KiB = {t.psum_bank_fp32} fp32 values"),
        ("matmul stationary free size max", f"{t.stationary_fmax}"),
        ("matmul contraction (partition) max", f"{t.contraction_max}"),
        ("matmul moving free size max (fp32 PSUM)", f"{t.moving_fmax}"),
        ("peak bf16 matmul per core", f"{t.peak_bf16_flops / 1e12:.1f} TFLOPS"),
        ("peak fp32 matmul per core", f"{t.peak_fp32_flops / 1e12:.1f} TFLOPS (a quarter of bf16: 4x slower)"),
        ("DMA engines per core", f"{t.dma_engines}"),
        ("DMA fixed cost per transfer", f"about {t.dma_fixed_cost_s * 1e6:.1f} us"),
        ("DMA minimum efficient size", f"{t.dma_min_bytes_per_partition // kib} KiB per partition "
                                       f"({t.dma_good_bytes_per_partition // kib} KiB saturates)"),
        ("instruction initiation interval", f"about {t.min_ii_cycles} engine cycles"),
        ("innermost SBUF stride limit", "16 bytes (above halves bandwidth)"),
        ("profiler transpose insight threshold", "10% of hardware FLOPs"),
        ("spill red flag", "spill traffic above 30% of SBUF traffic"),
        ("roofline ridge (bf16, one core)", f"about {round(t.ridge_flops_per_byte)} FLOP per byte"),
        ("bf16 significand", "8 bits"),
        ("fp8 maxima", "float8_e4m3 240, float8_e4m3fn 448, float8_e5m2 57344"),
        ("NKI dialects", "legacy `neuronxcc.nki` (0.1); `import nki` from 0.2 (ISA calls take dst=); "
                         "`neuronxcc.nki` inside a kernel is a compile error from 0.4"),
    ]


# ---------------------------------------------------------------------------------------------
# Source excerpts.


@dataclass
class Excerpt:
    id: int
    file: str
    start: int
    end: int
    text: str
    lang: str
    fence: str
    finding_ids: list[str]


_LABEL = re.compile(r"<<<|>>>")


def _neutralise(text: str) -> str:
    """Excerpt text may not forge the UNTRUSTED markers (they use <<< >>>)."""
    return _LABEL.sub(lambda m: m.group(0)[0] + " " + m.group(0)[1:], text)


def _fence_for(text: str) -> str:
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}|~{3,}", text)), default=0)
    return "`" * max(3, longest + 1)


def _lookup(sources: dict[str, str], file: str) -> str | None:
    if file in sources:
        return sources[file]
    name = Path(file).name
    for key, text in sources.items():
        if Path(key).name == name:
            return text
    return None


def _lang(file: str) -> str:
    return "cuda" if file.endswith((".cu", ".cuh")) else "python"


def excerpts(review: Review, sources: dict[str, str] | None) -> list[Excerpt]:
    """Line windows around every cited location, merged per file, capped in count and length."""
    if not sources:
        return []
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for f in review.findings:
        locs = [(f.file, f.line, f.end_line or f.line)] + [(r.file, r.line, r.line) for r in f.related]
        for file, line, end in locs:
            if file and line and _lookup(sources, file) is not None:
                spans.setdefault(file, []).append((max(1, line - EXCERPT_CONTEXT), end + EXCERPT_CONTEXT, f.id))
    out: list[Excerpt] = []
    for file, items in spans.items():
        lines = (_lookup(sources, file) or "").splitlines()
        merged: list[list[Any]] = []
        for start, end, fid in sorted(items):
            end = min(end, len(lines), start + MAX_EXCERPT_LINES - 1)
            if start > len(lines):
                continue
            if merged and start <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], end)
                if fid not in merged[-1][2]:
                    merged[-1][2].append(fid)
            else:
                merged.append([start, end, [fid]])
        for start, end, fids in merged:
            body = "\n".join(f"{n:>5} | {lines[n - 1]}" for n in range(start, end + 1))
            body = _neutralise(body)
            out.append(Excerpt(len(out) + 1, file, start, end, body, _lang(file), _fence_for(body), fids))
            if len(out) >= MAX_EXCERPTS:
                return out
    return out


# ---------------------------------------------------------------------------------------------
# Messages.


def _finding_data(review: Review) -> list[dict[str, Any]]:
    keys = ("id", "rule", "name", "category", "criterion", "severity", "source", "file", "line",
            "end_line", "message", "evidence", "fix", "est_speedup", "confidence")
    return [{k: f.to_json()[k] for k in keys} for f in review.findings]


def _compact(model: Any) -> Any:
    if model is None:
        return None
    data = model.model_dump(mode="json", exclude_none=True)
    data.pop("plots", None)
    return data


def build_messages(review: Review, rubric: Rubric, target: Target,
                   sources: dict[str, str] | None) -> list[dict[str, str]]:
    env = environment()
    system = env.get_template("llm/system.md.j2").render(criteria_order=list(taxonomy.CRITERIA_ORDER))
    user = env.get_template("llm/user.md.j2").render(
        port=review.port,
        target=target,
        findings=_finding_data(review),
        performance=_compact(review.performance),
        numerics=_compact(review.numerics),
        hardware_facts=hardware_facts(target),
        rubric=rubric,
        rubric_scored=[{"criterion": c.id, "question": c.question, "levels": c.levels} for c in rubric.scored()],
        rubric_judged=rubric.judged(),
        excerpts=excerpts(review, sources),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def build_repair(messages: list[dict[str, str]], reply_json: str, violations: list[str]) -> list[dict[str, str]]:
    repair = environment().get_template("llm/repair.md.j2").render(violations=violations)
    return [*messages, {"role": "assistant", "content": reply_json}, {"role": "user", "content": repair}]
