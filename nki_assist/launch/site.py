"""The folder put first on the program's PYTHONPATH: its `sitecustomize.py` arms every Python process.

Python imports `sitecustomize` at start-up from the first folder of `sys.path` that has one, so every
interpreter the program starts (pytest-xdist workers, `subprocess.run([sys.executable, ...])`, a shell
script calling `python`) inherits PYTHONPATH and the record file's variable and arms itself. A
`sitecustomize` the environment already had (Debian's, a project's) is imported after ours, so nothing it
did is lost.
"""

from __future__ import annotations

import os
from pathlib import Path

SITECUSTOMIZE = '''\
# Written by `nki-assist run`: the simulator's NKI modules for this process (nki_assist/launch/site.py).
import os as _os
import sys as _sys

if _os.environ.get("NKI_ASSIST_RUN_RECORD"):
    try:
        from nki_assist.launch.hook import install as _install
        _install()
    except Exception as _exc:  # the program still runs; its NKI imports then fail as they would
        _sys.stderr.write("nki-assist run: could not install the simulator: %r\\n" % (_exc,))


def _chain():
    import importlib.machinery
    import importlib.util
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


try:
    _chain()
except Exception as _exc:
    _sys.stderr.write("nki-assist run: the environment's own sitecustomize failed: %r\\n" % (_exc,))
'''


def package_root() -> str:
    """The folder holding the nki_assist package (so the program's interpreters can import it)."""
    return str(Path(__file__).resolve().parent.parent.parent)


def write_site(folder: str | Path) -> str:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return str(folder)


def pythonpath(site_dir: str, existing: str | None) -> str:
    parts = [site_dir] + [p for p in (existing or "").split(os.pathsep) if p] + [package_root()]
    seen: list[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    return os.pathsep.join(seen)
