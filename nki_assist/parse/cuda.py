"""CUDA front end: one tree-sitter-cuda parse, one walk, facts per `__global__`/`__device__` function.

`parse_cuda(text, path)` never raises. It returns a `CudaFile` whose kernels carry the facts listed in
`cuda_model.CudaKernel`: parameters, `__shared__` arrays with folded sizes, barriers, warp shuffles,
atomics, fast-math intrinsics, tensor-core use, accumulators, bounds guards, loops with trip
expressions, grid-stride loops, thread-index uses, epilogue hints, global stores and `<<<...>>>`
launches from host code in the same file. These feed the static CUDA rules (rules/cuda/checks.py)
and the CUDA-vs-NKI migration checks.

Grammar notes (tree-sitter-cuda 0.21): `__global__`/`__device__`/`__host__` are anonymous children
of `function_definition`; `__shared__` is a `type_qualifier`; launches are `call_expression`s with a
`kernel_call_syntax` child. Columns reported are 1-based characters, not UTF-8 bytes.
"""

from __future__ import annotations

import re
from functools import cache

from .cuda_model import CudaFile, CudaKernel, CudaParam, SharedDecl
from .cuda_state import MAX_DEPTH, refs
from .cuda_vocab import FAST_MATH

from .cuda_walk import _Walker
from .source import normalize_newlines

__all__ = ["parse_cuda", "refs", "CudaFile", "CudaKernel", "CudaParam", "SharedDecl", "FAST_MATH", "MAX_DEPTH"]

MAX_PARSE_BYTES = 4_000_000  # above this the file is not parsed (a note says so)
_UNROLL = re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+unroll\b([^\n]*)", re.M)


@cache
def _language():
    import tree_sitter_cuda
    from tree_sitter import Language

    return Language(tree_sitter_cuda.language())


def parse_cuda(text: str, path: str) -> CudaFile:
    """Parse CUDA source text. Never raises; problems become `syntax_errors` or `notes`."""
    out = CudaFile(path=path)
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else str(text)
        text = normalize_newlines(text)
        if "\x00" in text[:8192]:
            out.notes.append("binary file (NUL bytes); not parsed as CUDA")
            return out
        src = text.encode("utf-8", "surrogatepass")
        if len(src) > MAX_PARSE_BYTES:
            out.notes.append(f"file is {len(src)} bytes, over the {MAX_PARSE_BYTES}-byte parse limit; not parsed")
            return out
        out.lines = text.splitlines()
        if not text.strip():
            return out
        from tree_sitter import Parser

        # `#pragma unroll` may sit between a loop header and its body, which tree-sitter cannot parse:
        # blank the pragmas (same byte length, offsets unchanged) and hand them to the walker by line.
        pragmas: dict[int, str] = {}
        if b"pragma" in src:
            for m in _UNROLL.finditer(src):
                pragmas[src.count(b"\n", 0, m.start()) + 1] = m.group(1).decode("utf-8", "replace").strip()
            src = _UNROLL.sub(lambda m: b" " * len(m.group(0)), src)
        tree = Parser(_language()).parse(src)

        walker = _Walker(src, out, tree.root_node.has_error)
        walker.unroll_pragmas = pragmas
        walker.run(tree.root_node)
    except Exception as exc:  # the contract: never raise
        out.notes.append(f"internal CUDA parser error: {type(exc).__name__}: {exc}")
    return out


