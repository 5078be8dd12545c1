"""Pairing a CUDA kernel with its NKI port: kernels, parameters, outputs, accumulators.

Pure functions over the two front ends' facts; the MIG rules in migration.py build on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...parse.cuda_model import CudaFile, CudaKernel, CudaParam, canonical_dtype
from ...parse.nki_model import DMA_APIS, Call, NkiFile, NkiKernel, Param

# Normalised roles a parameter name can play (GEMM-style naming on both sides).
_ROLES = {
    "a": {"a", "lhs", "mat_a", "mata", "a_mat", "lhs_t", "lhst", "a_t", "at", "a_tile"},
    "b": {"b", "rhs", "mat_b", "matb", "b_mat", "rhs_t", "b_t", "bt"},
    "bias": {"bias", "b_bias", "bias_vec", "bias_ptr"},
    "out": {"c", "out", "output", "result", "res", "y", "dst", "d", "out_tensor", "c_out"},
}
# CUDA canonical dtype -> NKI dtype name
CUDA_TO_NKI_DTYPE = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
                     "tf32": "float32", "fp8_e4m3": "float8_e4m3", "fp8_e5m2": "float8_e5m2"}
PRECISION_BITS = {"float64": 53, "float32": 24, "tfloat32": 11, "float16": 11, "bfloat16": 8,
                  "float8_e4m3": 4, "float8_e4m3fn": 4, "float8_e5m2": 3}
SIZE_NAMES = re.compile(r"^(?:[mnkbhdlsp]|n_?\w*|num_?\w*|\w*_?(?:size|len|dim|count|rows|cols|stride|ld[abc]?))$",
                        re.I)


def role(name: str) -> str | None:
    low = name.lower()
    for r, names in _ROLES.items():
        if low in names:
            return r
    return None


def transposed_name(name: str) -> bool:
    """`lhsT`, `a_t`, `aT`, `AT`, `rhs_T`: names saying the operand arrives transposed."""
    return bool(re.fullmatch(r"(?:lhs|rhs|a|b|mat_?[ab])_?[tT]", name)) or name in ("lhsT", "rhsT")


@dataclass
class Pairing:
    """CUDA param name -> NKI param name, and how each pair was made (name | role | position)."""

    pairs: dict[str, str] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)
    # CUDA scalar param -> (port constant or literal, value): the launcher passes a literal the port bakes in
    constants: dict[str, tuple[str, float]] = field(default_factory=dict)

    def nki_for(self, cuda_name: str) -> str | None:
        return self.pairs.get(cuda_name)

    def describe(self, cuda_name: str) -> str:
        n = self.pairs.get(cuda_name)
        return f"`{cuda_name}` -> `{n}` (by {self.how[cuda_name]})" if n else f"`{cuda_name}` -> none"

    def to_json(self) -> dict[str, str]:
        out = {c: f"{n} ({self.how[c]})" for c, n in self.pairs.items()}
        out.update({c: f"{n} = {v:g} (value)" for c, (n, v) in self.constants.items()})
        return out


def pick_cuda_kernel(cf: CudaFile, name: str | None) -> CudaKernel | None:
    if name:
        k = cf.kernel(name)
        return k if k is not None and k.qualifier == "global" else None
    g = cf.global_kernels
    if len(g) == 1:
        return g[0]
    launched = {la.kernel for la in cf.launches}
    g = [k for k in g if k.name in launched]
    return g[0] if len(g) == 1 else None


def pick_nki_kernel(nf: NkiFile, name: str | None) -> NkiKernel | None:
    if name:
        return nf.kernel(name)
    jit = [k for k in nf.kernels if k.decorator]
    pool = jit or nf.kernels
    return pool[0] if len(pool) == 1 else None


def cuda_outputs(k: CudaKernel) -> list[CudaParam]:
    stored = {s.target for s in k.global_stores} | {a.target.split("[")[0].strip("&( ") for a in k.atomics}
    return [p for p in k.params if p.is_pointer and (p.name in stored or (not p.is_const and not stored))]


def cuda_value_inputs(k: CudaKernel) -> list[CudaParam]:
    """Inputs that carry values: const/read pointers and float scalars (alpha, eps, ...), not int sizes."""
    outs = {p.name for p in cuda_outputs(k)}
    res = []
    for p in k.params:
        if p.name in outs:
            continue
        if p.is_pointer or canonical_dtype(p.type) in ("float", "double", "half", "bfloat16"):
            res.append(p)
    return res


def pair_params(ck: CudaKernel, nk: NkiKernel) -> Pairing:
    """Pair CUDA value inputs with NKI params: exact name, then role (a/lhsT, b/rhs, bias), then position."""
    pr = Pairing()
    cins = cuda_value_inputs(ck)
    free = [p.name for p in nk.params]
    for how, key in (("name", lambda s: s.lower()), ("role", role)):
        for cp in cins:
            if cp.name in pr.pairs:
                continue
            ck_key = key(cp.name)
            if ck_key is None:
                continue
            match = next((n for n in free if key(n) == ck_key), None)
            if match is not None:
                pr.pairs[cp.name], pr.how[cp.name] = match, how
                free.remove(match)
    left = [cp for cp in cins if cp.name not in pr.pairs]
    pointers_left = [cp for cp in left if cp.is_pointer]
    # Position only when the leftovers line up one to one (else the pairing would be a guess).
    if pointers_left and len(pointers_left) == len(free) and len(left) == len(pointers_left):
        for cp, n in zip(pointers_left, free):
            pr.pairs[cp.name], pr.how[cp.name] = n, "position"
    return pr


_NUM = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?$")
_NUM_IN_TEXT = re.compile(r"(?<![\w.])(?:\d+\.\d*|\.\d+|\d+[eE][-+]?\d+)(?:[eE][-+]?\d+)?(?![\w.])")


def _number(text: str, defines: dict[str, object]) -> float | None:
    t = text.strip().strip("()")
    if _NUM.match(t):
        return float(t.rstrip("fFlL"))
    v = defines.get(t)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _call_args(text: str) -> list[str]:
    """Top-level comma-separated arguments of the first parenthesised list in `text`."""
    depth, cur, out = 0, "", []
    for ch in text:
        if ch == "(":
            depth += 1
            if depth == 1:
                continue
        elif ch == ")":
            depth -= 1
            if depth == 0:
                out.append(cur)
                return [a.strip() for a in out]
        if depth >= 1:
            if ch == "," and depth == 1:
                out.append(cur)
                cur = ""
            else:
                cur += ch
    return []


def launch_values(cf: CudaFile, ck: CudaKernel) -> dict[str, float]:
    """CUDA param -> the numeric literal (or #define/constexpr constant) every launch passes for it."""
    seen: dict[str, set[float]] = {}
    for la in cf.launches:
        if la.kernel != ck.name or not cf.lines:
            continue
        text = "\n".join(cf.lines[la.line - 1:la.line + 8])
        at = text.find(">>>")
        args = _call_args(text[at + 3:]) if at >= 0 else []
        if len(args) != len(ck.params):
            continue
        defines = {**cf.defines, **ck.constants}
        for p, a in zip(ck.params, args):
            v = _number(a, defines)
            seen.setdefault(p.name, set()).add(v if v is not None else float("nan"))
    return {n: next(iter(vs)) for n, vs in seen.items() if len(vs) == 1 and next(iter(vs)) == next(iter(vs))}


def _same(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def port_constant(nk: NkiKernel, source: str | None, value: float) -> str | None:
    """A module constant the kernel reads, or a literal in its body, equal to `value`."""
    env = getattr(nk, "_env", None)
    if env is not None:
        for name in sorted(nk.used_names):
            v = env.lookup(name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and _same(float(v), value):
                return name
    if source:
        body = "\n".join(source.splitlines()[nk.line - 1:nk.end_line])
        for m in _NUM_IN_TEXT.finditer(body):
            if _same(float(m.group(0)), value):
                return m.group(0)
    return None


def pair_constants(pr: Pairing, cf: CudaFile, ck: CudaKernel, nk: NkiKernel, nki_source: str | None) -> None:
    """Pair unpaired CUDA scalars with port constants by the value the launcher passes."""
    for name, v in launch_values(cf, ck).items():
        cp = ck.param(name)
        if name in pr.pairs or cp is None or cp.is_pointer:
            continue
        const = port_constant(nk, nki_source, v)
        if const is not None:
            pr.constants[name] = (const, v)


def nki_output_names(nk: NkiKernel) -> set[str]:
    names = {n for r in nk.returns for n in r.names}
    for c in nk.calls:
        if c.api in ("nl.store",) or (c.api in DMA_APIS and c.dst_style):
            d = c.operand("dst")
            if d is not None and d.name and (d.is_param or d.buffer in ("hbm", "shared_hbm", "private_hbm")):
                names.add(d.name)
    return names


def output_store(nk: NkiKernel) -> Call | None:
    """The last DMA writing a kernel output (the place an epilogue must have happened by)."""
    outs = nki_output_names(nk)
    best = None
    for c in nk.calls:
        if c.api not in DMA_APIS:
            continue
        d = c.operand("dst")
        if d is not None and d.name in outs and (best is None or c.line >= best.line):
            best = c
    return best


def cuda_tile_sizes(cf: CudaFile, ck: CudaKernel) -> dict[int, tuple[str, int]]:
    """Tile sizes the CUDA kernel uses: shared-array dims and TILE/BLOCK-like constants -> (where, line)."""
    out: dict[int, tuple[str, int]] = {}
    for s in ck.shared:
        for d in s.dims:
            if isinstance(d, int) and d > 1:
                out.setdefault(d, (f"__shared__ {s.name}{''.join(f'[{x}]' for x in s.dims)}", s.line))
    tile_name = re.compile(r"(?:TILE|BLOCK|BLK|^B[MNK]$|^T[MNK]$|^TS$|^BS$)", re.I)
    for name, v in {**cf.defines, **ck.constants}.items():
        if isinstance(v, int) and v > 1 and tile_name.search(name) and v not in out:
            line = define_line(cf, name) or ck.line
            out[v] = (f"{name} = {v}", line)
    return out


def define_line(cf: CudaFile, name: str) -> int | None:
    pat = re.compile(rf"^\s*(?:#\s*define\s+{re.escape(name)}\b|.*\b(?:constexpr|const)\b.*\b{re.escape(name)}\s*=)")
    for i, text in enumerate(cf.lines, 1):
        if pat.search(text):
            return i
    return None


@dataclass(frozen=True)
class CudaAcc:
    name: str
    dtype: str  # canonical CUDA dtype (float, half, ...)
    line: int
    how: str  # accumulator | tensor-core | fma-update


_FMA_SELF = re.compile(r"\b(\w+)((?:\[[^\]]*\])*)\s*=\s*(?:__)?fmaf?(?:_r[nzud])?\s*\((.*),\s*\1\2\s*\)")
_PLUS_EQ = re.compile(r"\b(\w+)((?:\[[^\]]*\])*)\s*[+-]=")


def cuda_accumulators(cf: CudaFile, ck: CudaKernel) -> list[CudaAcc]:
    accs = [CudaAcc(a.name, canonical_dtype(a.dtype) or "", a.line, "accumulator")
            for a in ck.accumulators if a.dtype]
    for t in ck.tensor_core:
        if len(t.dtypes) > 2 and t.dtypes[2]:
            accs.append(CudaAcc(t.op, t.dtypes[2], t.line, "tensor-core"))
    if accs or not cf.lines:
        return accs
    # The front end records scalar accumulators; register arrays updated with fmaf(a, b, acc[i][j])
    # or acc[i] += ... inside loops are found here from the kernel's own lines.
    loop_lines = [(lp.line, lp.end_line) for lp in ck.loops]
    for ln in range(ck.line, min(ck.end_line, len(cf.lines)) + 1):
        text = cf.lines[ln - 1].split("//")[0]
        m = _FMA_SELF.search(text) or _PLUS_EQ.search(text)
        if not m or m.group(1) not in ck.locals:
            continue
        if not any(a <= ln <= b for a, b in loop_lines):
            continue
        dt = canonical_dtype(ck.locals[m.group(1)])
        if dt in ("float", "double", "half", "bfloat16"):
            accs.append(CudaAcc(m.group(1), dt, ln, "fma-update"))
            break
    return accs


def nki_dtype(d: str | None) -> str | None:
    if d is None:
        return None
    return d.replace("nl.", "").replace("np.", "")


def params_by_name(nk: NkiKernel) -> dict[str, Param]:
    return {p.name: p for p in nk.params}
