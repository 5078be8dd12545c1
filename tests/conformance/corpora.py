"""Where the public corpora are: `<repo root>/../shared/corpora/<repo>@<commit>/` (CI has shared/ beside the
clone), or the folder `NKI_ASSIST_CORPORA` names. Tests that read them skip with a reason when absent; their
code is read in place and never copied into this repository."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from nki_assist.parse.nki import is_nki_source

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLES_LEGACY = "nki-samples@7af4e4d"  # last commit with the legacy tutorials and the reference kernels
SAMPLES_HEAD = "nki-samples@6905a68"  # new-API tutorials, contributed kernels
NKI_LIBRARY = "nki-library@d2ad3a5"  # the 2026-04-13 release (NKI 0.3.0 / SDK 2.29)


def corpora_dir() -> Path | None:
    env = os.environ.get("NKI_ASSIST_CORPORA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "corpora"
    return path if path.is_dir() else None


def snapshot(name: str) -> Path | None:
    """The folder of one snapshot (`nki-samples@7af4e4d`), or None when it is not on this machine."""
    base = corpora_dir()
    path = base / name if base is not None else None
    return path if path is not None and path.is_dir() else None


def nki_sources(*names: str) -> list[tuple[str, str, str]]:
    """(snapshot, path inside it, text) of every .py file that imports NKI, in the named snapshots."""
    out = []
    for name in names:
        root = snapshot(name)
        if root is None:
            continue
        for p in sorted(root.rglob("*.py")):
            text = p.read_text(encoding="utf-8", errors="replace")
            if is_nki_source(text):
                out.append((name, p.relative_to(root).as_posix(), text))
    return out


def compare_outputs(pairs, rtol: float, atol: float) -> tuple[bool, float, str | None]:
    """(all within tolerance, worst absolute error, why not comparable) over (kernel output, reference) pairs."""
    worst, ok = 0.0, True
    for got, want in pairs:
        g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if g.shape != w.shape:
            return False, worst, f"shape {list(g.shape)} vs reference {list(w.shape)}"
        worst = max(worst, float(np.nanmax(np.abs(g - w))) if g.size else 0.0)
        ok &= bool(np.allclose(g, w, rtol=rtol, atol=atol))
    return ok, worst, None
