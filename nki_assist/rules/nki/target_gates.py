"""NKI523: an API that only newer NeuronCores have, in a kernel nothing pins to such a core.

The SDK's API docs mark some instructions and modes as generation-specific ("Available only on NeuronCore-v4 and
newer"; `perf_mode=double_row` "starting NeuronCore-v3"; HWDGE "only supported for NeuronCore-v3 or newer"). The
compiler builds a kernel for one target: the `platform_target=` of `nki.jit` where the dialect has it (legacy
`neuronxcc.nki` and NKI 0.2; removed in 0.3), else `NEURON_PLATFORM_TARGET_OVERRIDE` or the detected chip.
- the kernel pins an older target: error (that build cannot have the instruction);
- nothing pins it and the dialect lets the decorator carry the target: warning, the kernel builds only where the
  build host's default target happens to be new enough (the SDK's own examples pin `platform_target=` on such
  kernels);
- nothing pins it, NKI 0.3+ (the target lives in the environment) and the checked target is older: info (the
  checked target may be the default, and a library's trn3-only kernels are checked at trn2 too);
- the kernel branches on `get_nc_version()`/`nc_version` or picks the mode in a conditional: no finding.
"""

from __future__ import annotations

import ast
import bisect
import re
from functools import partial
from itertools import accumulate

from ...api import table
from ...api.hardware import Target
from ...api.version import target_version
from ...findings import RelatedLocation, Severity
from ...parse.nki_model import NkiFile, NkiKernel
from ...parse.pyast import branch_nodes
from ..registry import RuleSpec
from .common import check, decorator_text, emit, kernel_findings, kernel_function, resolve_api

RULES = [  # this module's rules: the registry collects them, docs/rules/ is generated from them
    RuleSpec("NKI523", "generation-gated-api-without-target", "unsupported-construct", Severity.WARNING,
             "An instruction or mode the API docs mark as NeuronCore-v3+/v4+ only, in a kernel whose target does "
             "not guarantee that generation.",
             fix="Pin the kernel's target to a generation that has it, or branch on nisa.get_nc_version().",
             doc="""\
## What it finds
Uses of the API the SDK's documentation marks as generation-specific:
- NeuronCore-v4 (trn3) and newer: `nisa.nc_matmul_mx`, `nisa.activate2`, `nisa.rand2`, `nisa.exponential`,
  `nisa.quantize_mx`, `nl.abs_max`, `nl.abs_min` ("Available only on NeuronCore-v4 and newer");
- NeuronCore-v3 (trn2) and newer: `nisa.dma_transpose`, `nisa.range_select`, `nisa.rand_set_state`,
  `nisa.rand_get_state`, `nisa.nonzero_with_count`, `nc_matmul(perf_mode=double_row...)` (FP8 double-row mode,
  "on NeuronCore-v3 and NeuronCore-v4"), `dge_mode=hwdge` ("only supported for NeuronCore-v3 or newer").

In legacy `neuronxcc.nki` code only the gates its own docs and examples state count (`range_select`, the
`double_row_gen3` perf mode, HWDGE): the legacy `dma_transpose`, for one, carries no generation note.

Severity follows what the file and the settings say about the target:
- the kernel pins an older target (`@nki.jit(platform_target='trn1')`, or a `NEURON_PLATFORM_TARGET_OVERRIDE`
  the file sets): error;
- nothing pins it and the dialect sets the target on the decorator (`neuronxcc.nki` and NKI 0.2, where
  `nki.jit` takes `platform_target=`): warning, the kernel builds only where the build host's default target is
  new enough;
- from NKI 0.3 (`platform_target` removed; the target comes from the environment), nothing pins it and the
  checked target (`--target`) is older: info (the checked target may be the default; a library's trn3-only
  kernels are checked at trn2 too);
- a checked target that has it (NKI 0.3+), a kernel that branches on `get_nc_version()`/`nc_version`, or a mode
  chosen by a conditional expression:
  no finding. A sub-kernel without a decorator takes its caller's target and gets no decorator warning.

## Why it matters on Trainium
The compiler builds a kernel for one NeuronCore generation; an instruction that generation lacks is a compile
error, or the wrong program. The SDK's own examples pin `platform_target='trn2'` on double-row matmul kernels and
`'trn3'` on MX kernels; nki-samples' double-row matmul reference kernel first shipped without it and was fixed
by adding `platform_target='trn2'`.

## Example
```python
@nki.jit                                           # no platform_target
def fp8_matmul(lhsT, rhs):
    ...
    res += nisa.nc_matmul(a, b, perf_mode='double_row_gen3')   # NKI523
```

## Fix
`@nki.jit(platform_target='trn2')` (legacy and NKI 0.2), `NEURON_PLATFORM_TARGET_OVERRIDE=trn2` (NKI 0.3+), or
`if nisa.get_nc_version() >= nisa.nc_version.gen3:` with a fallback path for older cores.
""", policy="failure", emits=(Severity.ERROR, Severity.INFO)),
]

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO
# API -> (oldest NeuronCore generation, the doc's wording); from the SDK's API stubs (2.27-2.32 nki/api)
_GATED_CALLS = {
    "nisa.nc_matmul_mx": (4, "Available only on NeuronCore-v4 and newer"),
    "nisa.activate2": (4, "Available only on NeuronCore-v4 and newer"),
    "nisa.rand2": (4, "Available only on NeuronCore-v4 and newer"),
    "nisa.exponential": (4, "Available only on NeuronCore-v4 and newer"),
    "nisa.quantize_mx": (4, "Available only on NeuronCore-v4 and newer"),
    "nl.abs_max": (4, "Available only on NeuronCore-v4 (trn3) and newer"),
    "nl.abs_min": (4, "Available only on NeuronCore-v4 (trn3) and newer"),
    "nisa.dma_transpose": (3, "Available only on NeuronCore-v3 or newer"),
    "nisa.range_select": (3, "Available only on NeuronCore-v3 and newer"),  # the legacy docs say so too
    "nisa.rand_set_state": (3, "Supported arch versions: NeuronCore-v3+"),
    "nisa.rand_get_state": (3, "Supported arch versions: NeuronCore-v3+"),
    "nisa.nonzero_with_count": (3, "Available only on NeuronCore-v3 and newer"),
}
# keyword=value modes: (api suffix, keyword, value pattern) -> (generation, doc wording)
# the gates the legacy (neuronxcc.nki) docs state too; the others are documented from the 2.27 stubs on (legacy
# dma_transpose, for one, has no generation note: its docs only gate HWDGE)
_LEGACY_GATES = frozenset({"nisa.range_select", "perf_mode", "dge_mode"})
_GATED_KWARGS = [
    (("nc_matmul", "matmul"), "perf_mode", re.compile(r"double_row"),
     (3, "double_row perf mode: NeuronCore-v3 and NeuronCore-v4 (nisa.nc_matmul)")),
    (("dma_copy", "dma_transpose", "load", "store"), "dge_mode", re.compile(r"hwdge"),
     (3, "Hardware based DGE is only supported for NeuronCore-v3 or newer (nisa.dma_copy)")),
]
# names a gated use must spell (plain substring tests: cheaper than a regex over a large kernel)
_WORDS = ("double_row", "hwdge", "nc_matmul_mx", "activate2", "rand2", "exponential", "quantize_mx", "abs_max",
          "abs_min", "dma_transpose", "range_select", "rand_set_state", "rand_get_state", "nonzero_with_count")
_GEN_OF = {"trn1": 2, "inf2": 2, "gen2": 2, "trn2": 3, "gen3": 3, "trn3": 4, "gen4": 4}
_NAME_OF = {2: "trn1 (NeuronCore-v2)", 3: "trn2 (NeuronCore-v3)", 4: "trn3 (NeuronCore-v4)"}
_PIN = re.compile(r"platform_target\s*=\s*['\"](\w+)['\"]")
_ENV_PIN = re.compile(r"NEURON_PLATFORM_TARGET_OVERRIDE['\"]\s*\]?\s*[=,]\s*['\"](\w+)['\"]")
_AWARE = re.compile(r"\b(?:get_nc_version|nc_version)\b")


def _decorator_line(nf: NkiFile, k: NkiKernel) -> int | None:
    for i in range(k.line - 2, max(-1, k.line - 10), -1):
        if i < len(nf.lines) and nf.lines[i].lstrip().startswith("@"):
            return i + 1
    return None


def _word_lines(nf: NkiFile, text: str) -> set[int]:
    """The 1-based lines holding one of _WORDS (str.find over the whole text, then the line of each hit)."""
    starts = [0, *accumulate(len(line) + 1 for line in nf.lines)]  # each line's offset in `text`
    out = set()
    for w in _WORDS:
        i = text.find(w)
        while i != -1:
            out.add(bisect.bisect_right(starts, i))
            i = text.find(w, i + 1)
    return out


def _nodes_on(fn: ast.FunctionDef, lines: set[int]):
    """The kernel's own nodes (as nki_common.scope_nodes), skipping statements that span none of `lines`."""
    ordered = sorted(lines)
    stack = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.stmt):
            i = bisect.bisect_left(ordered, n.lineno)  # the first of `lines` at or after the statement's first line
            if i == len(ordered) or ordered[i] > (n.end_lineno or n.lineno):
                continue
        yield n
        for c in branch_nodes(n):  # (the singletons are no calls)
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(c)


def _uses(nf: NkiFile, fn: ast.FunctionDef, lines: set[int]):
    """(node to report: the call or its keyword, feature text, generation, doc wording) for each generation-gated use that is not chosen by a
    conditional expression."""
    for n in _nodes_on(fn, lines):
        if not isinstance(n, ast.Call):
            continue
        api = resolve_api(nf, n.func)
        if api in _GATED_CALLS and (nf.dialect != "legacy" or api in _LEGACY_GATES):
            gen, doc = _GATED_CALLS[api]
            yield n, f"`{api}`", gen, doc
            continue
        last = api.rsplit(".", 1)[-1]
        for suffixes, kw, pattern, (gen, doc) in _GATED_KWARGS:
            if last not in suffixes or (nf.dialect == "legacy" and kw not in _LEGACY_GATES):
                continue
            found = next((k for k in n.keywords if k.arg == kw), None)
            value = found.value if found is not None else None
            if value is None or isinstance(value, ast.IfExp):
                continue  # absent, or chosen at trace time
            text = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else (
                ast.unparse(value) if isinstance(value, ast.Attribute) else "")
            if pattern.search(text):
                yield found, f"`{kw}={ast.unparse(value)}`", gen, doc  # reported at the keyword


def _dialect_pins(nf: NkiFile, t: Target) -> bool:
    """The kernel's decorator is where this dialect sets the target (platform_target= until NKI 0.3)."""
    if nf.dialect == "legacy":
        return True
    return nf.dialect in ("new", "transitional") and table.vkey(target_version(t)) < (0, 3)


@check("NKI523", per_file=True)  # reads the decorator lines and the file's target override
def generation_gated_api(nf: NkiFile, t: Target):
    text = "\n".join(nf.lines)
    if nf.dialect not in ("legacy", "new", "transitional") or not any(w in text for w in _WORDS):
        return
    candidates = sorted(_word_lines(nf, text))
    env = _ENV_PIN.search(text) if "NEURON_PLATFORM_TARGET_OVERRIDE" in text else None
    for k in nf.kernels:
        lines = set(candidates[bisect.bisect_left(candidates, k.line):bisect.bisect_right(candidates, k.end_line)])
        if not lines:
            continue  # no gated name
        body = "\n".join(nf.lines[k.line - 1:k.end_line])
        if "nc_version" in body and _AWARE.search(body):
            continue  # the kernel reasons about the generation itself
        # besides the kernel's lines: the target, the decorator lines above it and the file's environment pin
        yield from kernel_findings(nf, k, "NKI523", partial(_kernel_uses, t=t, lines=lines, env=env),
                                   t.name, target_version(t), k.decorator, env.group(1) if env else None,
                                   tuple(nf.lines[max(0, k.line - 10):max(0, k.line - 1)]))


def _kernel_uses(nf: NkiFile, k: NkiKernel, t: Target, lines: set[int], env):
    """NKI523's findings in one kernel; `lines` are its lines that spell a gated name."""
    target_gen = _GEN_OF.get(t.name, 3)
    fn = kernel_function(nf, k)
    if fn is not None:
        pin = _PIN.search(decorator_text(nf, k)) or env
        pinned = _GEN_OF.get(pin.group(1).lower()) if pin else None
        decorator_line = _decorator_line(nf, k)
        for node, feature, gen, doc in _uses(nf, fn, lines):
            evidence = {"feature": feature.strip("`"), "requires_generation": gen, "doc": doc,
                        "pinned_target": pin.group(1) if pin else None, "target": t.name}
            if pinned is not None:
                if pinned >= gen:
                    continue
                sev, msg = E, (f"{feature} needs {_NAME_OF[gen]} or newer ({doc}), but the kernel pins "
                               f"`{pin.group(1)}`: that build cannot have it.")
            elif k.decorator is not None and _dialect_pins(nf, t):  # a sub-kernel takes its caller's target
                lacks = f"; the target {t.name} does not have it" if target_gen < gen else ""
                sev, msg = W, (f"{feature} needs {_NAME_OF[gen]} or newer ({doc}), but `{k.name}`'s `nki.jit` names "
                               f"no `platform_target`: it builds only where the build host's default target is new "
                               f"enough{lacks}.")
            elif target_gen < gen:  # the target lives in the environment; the checked one may be the default
                sev, msg = I, (f"{feature} needs {_NAME_OF[gen]} or newer ({doc}); the target {t.name} does not "
                               f"have it: check with `--target {_NAME_OF[gen].split()[0]}` if the kernel is meant for "
                               "that generation, or branch on `nisa.get_nc_version()`.")
            else:
                continue
            f = emit("NKI523", nf, node.lineno, node.col_offset + 1, node.end_lineno,
                     (node.end_col_offset or 0) + 1, msg, evidence, severity=sev,
                     fix=(f"Pin the kernel's target (`@nki.jit(platform_target='{_NAME_OF[gen].split()[0]}')` in "
                          "this dialect, `NEURON_PLATFORM_TARGET_OVERRIDE` from NKI 0.3), or branch on "
                          "`nisa.get_nc_version()` and keep a path for older cores."),
                     confidence="high" if sev is E else "medium")
            where = decorator_line if pin is None or pin is not env else None
            yield f.model_copy(update={"related": [RelatedLocation(
                file=nf.path or "", line=where, message="the kernel's target is set here" if pin is not None
                else "the kernel's decorator: no platform_target")]}) if where else f
