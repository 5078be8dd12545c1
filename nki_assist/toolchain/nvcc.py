"""nvcc backend: per-kernel registers, shared memory, spills and stack from ptxas.

`resource_usage(path)` compiles one `.cu` file with `nvcc --resource-usage -c -arch=<arch>` into a
temporary directory and parses the ptxas report nvcc prints on stderr (nvcc 13.0, same format as
`-Xptxas -v`):

    ptxas info    : Compiling entry function '_Z5sgemmPKfS0_Pfiii' for 'sm_80'
    ptxas info    : Function properties for _Z5sgemmPKfS0_Pfiii
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes smem, 388 bytes cmem[0]

It never raises: a missing nvcc, a compile error or a timeout give `available`/`ok` False and a note.
No GPU is needed; nvcc only compiles.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any

from .procs import owned

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_BARRIERS = re.compile(r"used (\d+) barriers")
_ARCH = re.compile(r"^sm_\d+[a-z]?$")


@dataclass
class NvccResult:
    """Resource usage per kernel. `kernels` maps a name (the demangled function name without
    namespace, template arguments or parameters, e.g. `sgemm`; the full demangled signature when two
    entries share that name) to {registers, shared_bytes, spill_stores_bytes, spill_loads_bytes,
    stack_bytes, const_bytes, barriers, mangled, demangled}."""

    available: bool  # nvcc was found
    ok: bool = False  # compilation succeeded and the report was parsed
    arch: str = "sm_80"
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    note: str | None = None  # why there is nothing (nvcc missing, compile error, timeout)
    command: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"available": self.available, "ok": self.ok, "arch": self.arch, "kernels": self.kernels,
                "note": self.note, "command": self.command}


def resource_usage(path: str, arch: str = "sm_80", timeout_s: float = 60) -> NvccResult:
    """Compile `path` for `arch` and return per-kernel resource usage. Never raises."""
    try:
        return _resource_usage(path, arch, timeout_s)
    except Exception as exc:  # contract: never raise
        return NvccResult(available=shutil.which("nvcc") is not None, arch=arch,
                          note=f"nvcc backend error: {type(exc).__name__}: {exc}")


def _resource_usage(path: str, arch: str, timeout_s: float) -> NvccResult:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return NvccResult(available=False, arch=arch, note="nvcc not found on PATH; CUDA resource usage skipped")
    if not _ARCH.match(arch):
        return NvccResult(available=True, arch=arch, note=f"invalid arch {arch!r}; expected e.g. sm_80")
    if not os.path.isfile(path):
        return NvccResult(available=True, arch=arch, note=f"no such file: {path}")
    src = os.path.abspath(path)
    with tempfile.TemporaryDirectory(prefix="nki-assist-nvcc-") as tmp:
        cmd = [nvcc, "--resource-usage", "-c", f"-arch={arch}", "-I", os.path.dirname(src),
               "-o", os.path.join(tmp, "out.o"), src]
        if src.endswith(".cuh"):
            cmd[1:1] = ["-x", "cu"]
        # own process group: on timeout the whole cicc/ptxas pipeline is killed, not just nvcc
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", cwd=tmp, start_new_session=True)
        with owned(proc.pid):  # not a stray for a concurrent sandbox run's sweep
            try:
                stdout, stderr = proc.communicate(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                return NvccResult(available=True, arch=arch, command=cmd,
                                  note=f"nvcc timed out after {timeout_s:g} s")
    output = (stderr or "") + (stdout or "")
    if proc.returncode != 0:
        errors = [ln.strip() for ln in output.splitlines() if "error" in ln.lower()]
        detail = "; ".join(errors[:3]) or output.strip()[-300:]
        return NvccResult(available=True, arch=arch, command=cmd,
                          note=f"nvcc failed (exit {proc.returncode}): {detail}")
    kernels = parse_ptxas_report(output)
    return NvccResult(available=True, ok=True, arch=arch, kernels=kernels, command=cmd,
                      note=None if kernels else "nvcc reported no entry functions (no __global__ kernels?)")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        proc.kill()
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass


def parse_ptxas_report(text: str) -> dict[str, dict[str, Any]]:
    """ptxas `-v` / `--resource-usage` text -> {kernel name: usage}. Only entry functions (kernels)."""
    entries: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    current: str | None = None
    props_for: str | None = None
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = m.group(1)
            if current not in entries:
                order.append(current)
                entries[current] = {"registers": 0, "shared_bytes": 0, "spill_stores_bytes": 0,
                                    "spill_loads_bytes": 0, "stack_bytes": 0, "const_bytes": 0,
                                    "barriers": 0}
            continue
        m = _PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        m = _FRAME.search(line)
        if m and props_for in entries:
            e = entries[props_for]
            e["stack_bytes"], e["spill_stores_bytes"], e["spill_loads_bytes"] = map(int, m.groups())
            continue
        m = _USED.search(line)
        if m and current in entries:
            e = entries[current]
            e["registers"] = int(m.group(1))
            s = _SMEM.search(line)
            e["shared_bytes"] = int(s.group(1)) if s else 0
            e["const_bytes"] = sum(int(c.group(1)) for c in _CMEM.finditer(line))
            b = _BARRIERS.search(line)
            e["barriers"] = int(b.group(1)) if b else 0
            current = None
    demangled = demangle_all(order)
    short = {m: _short_name(demangled[m]) for m in order}
    counts: dict[str, int] = {}
    for m in order:
        counts[short[m]] = counts.get(short[m], 0) + 1
    out: dict[str, dict[str, Any]] = {}
    for m in order:
        key = short[m] if counts[short[m]] == 1 else demangled[m]
        out[key] = dict(entries[m], mangled=m, demangled=demangled[m])
    return out


def demangle_all(names: list[str]) -> dict[str, str]:
    """Demangle with c++filt when present, else a small Itanium-ABI fallback for plain names."""
    result = {n: _fallback_demangle(n) for n in names}
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if tool and names:
        try:
            proc = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True,
                                  timeout=10)
            lines = proc.stdout.splitlines()
            if proc.returncode == 0 and len(lines) == len(names):
                result = dict(zip(names, lines))
        except (OSError, subprocess.SubprocessError):
            pass
    return result


def _fallback_demangle(name: str) -> str:
    """`_Z5sgemmPKfS0_Pfiii` -> `sgemm`, `_ZN2ns5scaleIfEEvPT_S1_i` -> `ns::scale`; others unchanged."""
    if not name.startswith("_Z"):
        return name
    rest = name[2:]
    parts = []
    nested = rest.startswith("N")
    if nested:
        rest = rest[1:]
    while rest and rest[0].isdigit():
        m = re.match(r"(\d+)", rest)
        n = int(m.group(1))
        rest = rest[len(m.group(1)):]
        parts.append(rest[:n])
        rest = rest[n:]
        if not nested:
            break
        if rest.startswith("I"):  # template args: skip the rest
            break
    return "::".join(parts) if parts else name


def _short_name(demangled: str) -> str:
    """`void ns::scale<float>(float*, float, int)` -> `scale`; `sgemm(float const*, ...)` -> `sgemm`."""
    head = demangled.split("(")[0]
    depth = 0
    out = []
    for ch in head:  # drop template argument lists
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip().split(" ")[-1]
    return name.split("::")[-1] or demangled


def annotate(cuda_file, result: NvccResult) -> int:
    """Copy per-kernel usage onto the parsed file's `__global__` kernels (`CudaKernel.resources`).

    Matches by function name; a name with several instantiations is left alone (ambiguous).
    Returns the number of kernels annotated.
    """
    by_short: dict[str, list[dict[str, Any]]] = {}
    for key, usage in result.kernels.items():
        by_short.setdefault(_short_name(usage.get("demangled", key)), []).append(usage)
    n = 0
    for k in cuda_file.kernels:
        matches = by_short.get(k.name, [])
        if k.qualifier == "global" and len(matches) == 1:
            k.resources = dict(matches[0], arch=result.arch)
            n += 1
    return n
