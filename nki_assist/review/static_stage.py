"""The review's static stages: the NKI file's own checks (as `check` runs them) and the migration checks of the
CUDA/NKI pair."""

from __future__ import annotations

from pathlib import Path

from ..api.hardware import Target
from ..findings import Finding
from ..parse.cuda import parse_cuda
from .options import ReviewOptions


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _static(path: Path, display: str, opts: ReviewOptions, target: Target, notes: list[str],
            unchecked: list[str]) -> list[Finding]:

    text = _read(path)
    if text is None:
        notes.append(f"{display}: cannot be read; no static checks")
        unchecked.append(f"{display}: cannot be read, no static checks")
        return []
    # deferred: imported while the kernel runs ahead (review start-up)
    from ..api.version import resolve_nki_version
    from ..check import CheckOptions, check_text

    # the NKI version from the kernel's own location (its project's pins), not the display path's
    choice = resolve_nki_version(None, path)
    # a guessed version stays a guess (check/versioned.py: its findings are at most warnings)
    version = opts.nki_version or (None if choice.guessed else choice.version)
    res = check_text(display, text, CheckOptions(target=target.name, select=opts.select, ignore=list(opts.ignore),
                                                  nki_version=version))
    notes.extend(res.notes)
    if res.status != "checked":
        notes.append(f"{display}: static checks {res.status}: {res.reason}")
        unchecked.append(f"{display}: static checks {res.status} ({res.reason})")
    return res.findings


def _migration(nki_path: Path, nki_display: str, cuda_path: Path | None, cuda_display: str | None,
               nki_kernel: str | None, cuda_kernel: str | None, target: Target, notes: list[str]) -> list[Finding]:
    if cuda_path is None:
        notes.append("no CUDA file: migration checks skipped")
        return []

    # deferred: imported while the kernel runs ahead (review start-up)
    from ..parse.nki import parse_nki
    from ..rules.migration.checks import run_migration_rules

    nki_text, cuda_text = _read(nki_path), _read(cuda_path)
    if nki_text is None or cuda_text is None:
        notes.append("migration checks skipped: a source file cannot be read")
        return []
    try:
        return run_migration_rules(parse_cuda(cuda_text, cuda_display), parse_nki(nki_text, nki_display), target,
                                   cuda_kernel=cuda_kernel, nki_kernel=nki_kernel, nki_source=nki_text)
    except Exception as exc:  # a migration-rule bug must not lose the rest of the review
        notes.append(f"migration checks failed internally ({type(exc).__name__}: {exc})")
        return []


def _cuda_accumulation(cuda_path: Path | None, cuda_kernel: str | None) -> str:
    """Accumulation precision of the CUDA kernel for the gpu-model scenario (fp32 unless it says otherwise)."""
    if cuda_path is None:
        return "float32"

    text = _read(cuda_path) or ""
    cf = parse_cuda(text, str(cuda_path))
    kernels = [k for k in cf.kernels if k.qualifier == "global" and (cuda_kernel is None or k.name == cuda_kernel)]
    dtypes = {str(getattr(a, "dtype", "") or "") for k in kernels for a in getattr(k, "accumulators", [])}
    if any(d in ("half", "__half", "float16", "__nv_bfloat16", "bfloat16") for d in dtypes) and "float" not in dtypes:
        return "float16"
    if any(d == "double" for d in dtypes):
        return "float64"
    return "float32"


def _kernel_line(path: Path, name: str | None) -> int | None:
    # deferred: imported while the kernel runs ahead (review start-up)
    from ..toolchain.base import kernel_def_line

    return kernel_def_line(str(path), name)
