"""The device part of a `.cu` file, for runtime compilers (NVRTC) that cannot compile host code.

Host functions (no `__global__`/`__device__` qualifier: launchers with `<<<...>>>`, `main`) and the
includes only host code needs are blanked with spaces, newlines kept, so the compiler's line numbers
are the file's. Parsed with the same tree-sitter-cuda grammar as parse/cuda.py.
"""

from __future__ import annotations

import re

from .cuda import _language

# Headers of host code or of the C library: NVRTC has none of them (its device math is built in).
HOST_HEADERS = ("cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "math.h", "cmath", "stdio.h", "cstdio",
                "stdlib.h", "cstdlib", "assert.h", "cassert", "iostream", "vector", "string")
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"][^\n]*', re.M)
_DEVICE_QUALIFIERS = {"__global__", "__device__"}


def _qualified(node, src: bytes) -> bool:
    """Whether a function_definition carries __global__/__device__ (anonymous children or, when the
    grammar folds them, the text before the declarator)."""
    for child in node.children:
        if child.type in _DEVICE_QUALIFIERS:
            return True
        if child.type == "function_declarator":
            head = src[node.start_byte:child.start_byte]
            return any(q.encode() in head for q in _DEVICE_QUALIFIERS)
    return False


def _blank(buf: bytearray, start: int, end: int) -> None:
    for i in range(start, end):
        if buf[i] not in (0x0A, 0x0D):
            buf[i] = 0x20


def device_source(text: str) -> str:
    """`text` with host functions and host-only includes blanked (same lines, same columns)."""
    from tree_sitter import Parser

    src = text.encode("utf-8", "surrogatepass")
    buf = bytearray(src)
    tree = Parser(_language()).parse(src)
    for node in tree.root_node.children:
        fn = node
        if node.type == "template_declaration":
            fn = next((c for c in node.children if c.type == "function_definition"), None)
        if fn is not None and fn.type == "function_definition" and not _qualified(fn, src):
            _blank(buf, node.start_byte, node.end_byte)
    for m in _INCLUDE.finditer(src):
        if m.group(1).decode("utf-8", "replace").strip() in HOST_HEADERS:
            _blank(buf, m.start(), m.end())
    return buf.decode("utf-8", "surrogatepass")
