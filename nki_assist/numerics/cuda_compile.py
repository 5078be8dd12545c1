"""Compile the port's CUDA kernel as `nki-assist golden` launches it: NVRTC, or nvcc as a fallback.

NVRTC comes from NVIDIA's cuda-python (`cuda.bindings.nvrtc`, the `[gpu]` extra) and needs no GPU:
it compiles the file's device code (parse/cuda_host.py blanks the host launchers) for an
architecture. nvcc (`nvcc -cubin`) compiles the whole file. Both get nvcc's default math
(`-ftz=false -prec-div=true -prec-sqrt=true -fmad=true`, see cuda_launch.compile_options): CuPy's
NVRTC default of -ftz=true flushes denormals and changes results. Nothing here raises for a bad
kernel: the result says what went wrong with the compiler's log.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..parse.cuda_host import device_source

DEFAULT_ARCH = "sm_80"
TIMEOUT_S = 120


@dataclass
class Compiled:
    ok: bool
    compiler: str  # "nvrtc 12.9", "nvcc 13.0", or "none"
    arch: str
    options: list[str] = field(default_factory=list)
    log: str = ""  # compiler messages (errors first)
    image: bytes | None = None  # cubin
    lowered_name: str | None = None  # the mangled kernel symbol to load (NVRTC name expression)

    def to_json(self) -> dict:
        return {"ok": self.ok, "compiler": self.compiler, "arch": self.arch, "options": self.options,
                "log": self.log[-4000:], "cubin_bytes": len(self.image) if self.image else 0,
                "lowered_name": self.lowered_name}


def _pip_include_dirs() -> list[str]:
    """Headers of NVIDIA's nvidia-cuda-runtime wheel (the same CUDA release as a pip NVRTC)."""
    try:
        import nvidia.cuda_runtime as rt  # type: ignore[import-not-found]
    except ImportError:
        return []
    return [str(Path(p) / "include") for p in getattr(rt, "__path__", []) if (Path(p) / "include" / "cuda_fp16.h").is_file()]


def cuda_include_dirs(pip_first: bool = False) -> list[str]:
    """Folders holding cuda_fp16.h / cuda_bf16.h: CUDA_HOME/CUDA_PATH, nvcc's toolkit, /usr/local/cuda,
    and NVIDIA's pip wheel (first with `pip_first`: NVRTC from pip needs headers of its own release)."""
    cands = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        cands.append(str(Path(os.path.realpath(nvcc)).parent.parent))
    cands.append("/usr/local/cuda")
    out = []
    for c in filter(None, cands):
        inc = Path(c) / "include"
        if (inc / "cuda_fp16.h").is_file() and str(inc) not in out:
            out.append(str(inc))
    pip = _pip_include_dirs()
    return pip + [d for d in out if d not in pip] if pip_first else out + [d for d in pip if d not in out]


# NVRTC has no math.h (parse/cuda_host.py blanks it); these are the macros kernels take from it.
_MATH_MACROS = {"INFINITY": "__int_as_float(0x7f800000)", "NAN": "__int_as_float(0x7fffffff)"}


def nvrtc_available() -> str | None:
    """NVRTC's version ("12.9") when cuda-python and libnvrtc load, else None."""
    try:
        from cuda.bindings import nvrtc  # type: ignore[import-not-found]

        err, major, minor = nvrtc.nvrtcVersion()
        return f"{major}.{minor}" if int(err) == 0 else None
    except Exception:  # not installed, or the library does not load
        return None


def nvcc_version() -> str | None:
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return None
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for part in out.split(","):
        part = part.strip()
        if part.startswith("release "):
            return part.split()[1]
    return "unknown"


def compile_nvrtc(source: str, name_expr: str, options: list[str], arch: str, include: list[str]) -> Compiled:
    from cuda.bindings import nvrtc  # type: ignore[import-not-found]

    version = nvrtc_available() or "?"
    macros = [f"-D{k}={v}" for k, v in _MATH_MACROS.items() if re.search(rf"\b{k}\b", source)
              and not re.search(rf"#\s*define\s+{k}\b", source)]
    opts = [f"--gpu-architecture={arch}", *options, *macros, *(f"-I{d}" for d in include)]
    res = Compiled(False, f"nvrtc {version}", arch, opts)
    err, prog = nvrtc.nvrtcCreateProgram(device_source(source).encode(), b"kernel.cu", 0, [], [])
    if int(err):
        res.log = f"nvrtcCreateProgram: {err}"
        return res
    try:
        nvrtc.nvrtcAddNameExpression(prog, name_expr.encode())
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        res.log = log.decode("utf-8", "replace").rstrip("\x00 \n")
        if int(err):
            return res
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        image = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, image)
        err, lowered = nvrtc.nvrtcGetLoweredName(prog, name_expr.encode())
        if int(err):
            res.log += f"\nno kernel {name_expr!r} in the compiled code ({err})"
            return res
        res.ok, res.image, res.lowered_name = True, image, lowered.decode()
        return res
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def compile_nvcc(path: Path, name_expr: str, options: list[str], arch: str, include: list[str],
                 template: bool) -> Compiled:
    nvcc = shutil.which("nvcc")
    res = Compiled(False, f"nvcc {nvcc_version()}", arch)
    if nvcc is None:
        res.compiler, res.log = "none", "nvcc not found"
        return res
    with tempfile.TemporaryDirectory(prefix="nki-assist-golden-") as tmp:
        src = Path(path).resolve()
        if template:  # nvcc compiles what is instantiated: take the kernel's address in host code
            src = Path(tmp) / "kernel.cu"
            src.write_text(f'#include "{Path(path).resolve()}"\n'
                           f"static void* const nki_assist_instance = (void*)&{name_expr};\n")
        cubin = Path(tmp) / "kernel.cubin"
        cmd = [nvcc, "-cubin", f"-arch={arch}", *options, f"-I{Path(path).resolve().parent}",
               *(f"-I{d}" for d in include), "-o", str(cubin), str(src)]
        res.options = cmd[1:-3]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp)
        except subprocess.TimeoutExpired:
            res.log = f"nvcc did not finish within {TIMEOUT_S} s"
            return res
        except OSError as exc:
            res.log = f"nvcc could not run: {exc}"
            return res
        res.log = (done.stderr + done.stdout).strip()
        if done.returncode == 0 and cubin.is_file():
            res.ok, res.image = True, cubin.read_bytes()
            res.lowered_name = _mangled(res.image, name_expr)
    return res


def _mangled(image: bytes, name_expr: str) -> str | None:
    """The kernel's symbol in an nvcc cubin (`_Z15sgemm_bias_reluPKfS0_S0_Pfiii`); None for templates,
    which only NVRTC's name expressions resolve."""
    if "<" in name_expr:
        return None
    name = name_expr.encode()
    m = re.search(rb"_Z%d%s[A-Za-z0-9_]*" % (len(name), re.escape(name)), image)
    return m.group(0).decode() if m else None


def compile_kernel(path: Path, name_expr: str, options: list[str], arch: str, *, template: bool = False,
                   prefer: str | None = None) -> Compiled:
    """NVRTC when cuda-python is installed (what the capture launches), else nvcc; `prefer` picks one."""
    use_nvrtc = prefer != "nvcc" and nvrtc_available() is not None
    first = None
    if use_nvrtc:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return Compiled(False, "nvrtc", arch, log=f"cannot read {path}: {exc}")
        first = compile_nvrtc(text, name_expr, options, arch,
                              [str(Path(path).resolve().parent), *cuda_include_dirs(pip_first=True)])
        if first.ok or prefer == "nvrtc" or shutil.which("nvcc") is None:
            return first
    elif prefer == "nvrtc":
        return Compiled(False, "none", arch, log="NVRTC is not available (pip install 'nki-assist[gpu]')")
    res = compile_nvcc(Path(path), name_expr, options, arch, cuda_include_dirs(), template)
    if first is not None and not res.ok:  # both failed: show NVRTC's messages too
        res.log = f"{first.compiler}:\n{first.log}\n\n{res.compiler}:\n{res.log}"
    elif first is not None:
        res.log = f"NVRTC failed, nvcc succeeded. {first.compiler}:\n{first.log}"
    return res
