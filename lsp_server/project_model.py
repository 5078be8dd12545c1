"""The workspace's project model: what `nki-assist check <workspace folder>` knows about every file.

`check <dir>` indexes every `.py` file its walk collects (nki_assist/project) and checks each file with its
slice of that project (roles of kernel parameters from call sites in other modules, imported constants,
launchers, ...). The server keeps the same model, so an open document gets the findings `check` gives it:

- built in a worker after `initialized`: the walk of each workspace folder (`check`'s exclude and .gitignore
  rules), each module indexed once (from `check`'s cache when it has the entry; no syntax tree is kept for a
  file that is not open: indexes only);
- an open document's index comes from its in-memory text (re-indexed by each check of it, incrementally);
  a closed or saved file, or one a watched-files event names, is re-indexed from disk (`refresh`);
- the `Project` is rebuilt when a module changed, and `digest(path)` (check's context digest) says whether
  a document's slice changed, so the server re-checks only the open documents whose context changed.

All methods may run in worker threads; one lock guards the modules and the project.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

MAX_FILES = 5000  # a workspace with more .py files than this is not modelled (documents are checked alone)


class WorkspaceModel:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.roots: list[str] = []
        self.order: list[str] = []  # module paths in walk order (Project: the first of two alike names keeps it)
        self.disk: dict[str, Any] = {}  # path -> ModuleInfo of the file on disk (no tree)
        self.stamp: dict[str, tuple[int, int]] = {}  # path -> (mtime_ns, size) the disk index was made from
        self.open: dict[str, Any] = {}  # path -> ModuleInfo of the open document's text (tree kept)
        self.names: dict[int, str] = {}  # id(ModuleInfo) -> its indexed name (a build renames alike modules)
        self.project: Any = None
        self._digests: dict[str, str] = {}  # path -> context digest in `project`
        self._built: dict[str, tuple[Any, tuple]] = {}  # path -> (module, its interface) of the last build
        self.kept: frozenset[str] = frozenset()  # the modules whose resolved calls the last build reused
        self.dirty = True
        self.ready = threading.Event()
        self.seconds = 0.0  # what the last build took
        self.problem: str | None = None

    # ---- building -------------------------------------------------------------------------------
    def build(self, roots: list[str]) -> float:
        """Walk and index the workspace folders (a worker's job). Returns the seconds it took."""
        started = time.perf_counter()
        try:
            files = _collect([os.path.abspath(r) for r in roots])
            if len(files) > MAX_FILES:
                self.problem = f"{len(files)} Python files in the workspace (> {MAX_FILES}): no project model"
                return 0.0
            indexes = _index_files(files, roots)
            with self.lock:
                self.roots = [os.path.abspath(r) for r in roots]
                self.order = [p for p in files if p in indexes]
                for path in self.order:
                    info, stamp = indexes[path]
                    self._set_disk(path, info, stamp)
                self.dirty = True
                self._current()
            self.ready.set()
        except Exception as exc:  # noqa: BLE001 - without a model, documents are checked alone
            self.problem = f"project model not built ({type(exc).__name__}: {exc})"
        self.seconds = time.perf_counter() - started
        return self.seconds

    def refresh(self) -> list[str]:
        """Re-walk the folders; re-index from disk what was created or changed, drop what was deleted.
        Returns the paths whose index changed."""
        if not self.ready.is_set():
            return []
        with self.lock:
            roots = list(self.roots)
        files = _collect(roots)
        changed = []
        for path in files:
            stamp = _stamp(path)
            if stamp is not None and self.stamp.get(path) != stamp:
                info = _index_path(path)
                if info is not None:
                    with self.lock:
                        self._set_disk(path, info, stamp)
                    changed.append(path)
        with self.lock:
            present = set(files)
            gone = [p for p in self.order if p not in present]
            for path in gone:
                self.disk.pop(path, None)
                self.stamp.pop(path, None)
            new_order = [p for p in files if p in self.disk]
            if gone or changed or new_order != self.order:
                self.order = new_order
                self.dirty = True
        return changed + gone

    def _set_disk(self, path: str, info, stamp) -> None:
        self.disk[path] = info
        self.stamp[path] = stamp
        self.names[id(info)] = info.name
        self.dirty = True

    # ---- documents ------------------------------------------------------------------------------
    def contains(self, path: str | None) -> bool:
        return bool(path) and self.ready.is_set() and path in self.disk

    def project_for(self, path: str, text: str, cache=None):
        """The project with `path` indexed from `text` (the open document), or None when the model does not
        hold `path` (not ready, or not a file `check` of the workspace would collect). With the document's
        `ParseCache`, the index reuses the unchanged parts of the last one, as a one-file check does."""
        if not self.contains(path):
            return None
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.project import index_module
        from nki_assist.project.incremental import PythonMemo

        memo = cache.extra.setdefault("python-level", PythonMemo()) if cache is not None else None
        with self.lock:
            old = self.open.get(path)
            if old is None or old.tree_text != text:
                info = index_module(path, text, keep_tree=True, memo=memo)
                self.names[id(info)] = info.name
                if old is not None:
                    self.names.pop(id(old), None)
                self.open[path] = info
                self.dirty = True
            project = self._current()
            ctx = project.context(path)
            if ctx is not None and memo is not None:
                ctx.memo = memo  # the rules' Python-level pass reuses it (project/__init__.context_for)
            return project

    def project_of(self, path: str):
        """The current project for a file checked from disk (workspace diagnostics); None outside the model."""
        if not self.contains(path):
            return None
        with self.lock:
            return self._current()

    def close(self, path: str | None) -> bool:
        """The document closed: its module is the file on disk again. True when the model changed."""
        if not path:
            return False
        with self.lock:
            old = self.open.pop(path, None)
            if old is None:
                return False
            self.names.pop(id(old), None)
            self.dirty = True
            self.stamp.pop(path, None)  # the next refresh re-reads it
        return True

    def digest(self, path: str | None) -> str | None:
        """check's context digest of `path` in the current project; None outside the model."""
        if not self.contains(path):
            return None
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        from nki_assist.project import context_digest

        with self.lock:
            project = self._current()
            got = self._digests.get(path)
            if got is None:
                got = self._digests[path] = context_digest(project.context(path))
            return got

    def _unchanged(self, modules: list) -> frozenset[str]:
        """The paths whose calls the last build resolved still resolve the same: all but the changed modules,
        when each changed module kept its name, functions and imports (what other modules' calls resolve
        against) and no module came or went; else none. Resolving every call is 9/10 of a build."""
        built = self._built
        if not built or len(built) != len(modules):
            return frozenset()
        keep = []
        for m in modules:
            old = built.get(m.path)
            if old is None:
                return frozenset()
            if old[0] is m:
                keep.append(m.path)
            elif old[1] != _interface(m):
                return frozenset()
        return frozenset(keep)

    def _current(self):
        """The project of the current modules (rebuilt when one changed). Caller holds the lock."""
        if self.dirty or self.project is None:
            # deferred: the server answers `initialize` before the engine is imported (start-up time)
            from nki_assist.project import Project

            modules = []
            for path in self.order:
                m = self.open.get(path) or self.disk[path]
                name = self.names.get(id(m), m.name)
                if m.name != name:  # a build renamed it (two alike names): each build decides again
                    m.name = name
                    for f in m.functions.values():
                        f.module = name
                modules.append(m)
            keep = self.kept = self._unchanged(modules)
            self.project = Project(modules, keep)
            self._built = {m.path: (m, _interface(m)) for m in modules}
            self._digests = {}
            self.dirty = False
        return self.project


def _interface(m) -> tuple:
    return m.name, tuple(m.functions), tuple(m.imports.items())


def _collect(roots: list[str]) -> list[str]:
    """The .py files `check <root>` collects (its walk, its config's exclude and .gitignore rules)."""
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import nki_assist.check as check
    from nki_assist.config import load_config

    files: list[str] = []
    seen: set[str] = set()
    for root in roots:
        if not os.path.isdir(root):
            continue
        try:
            options = check.options_from_config(load_config(root))
        except Exception:  # noqa: BLE001 - a broken config: the defaults
            options = check.CheckOptions()
        found, _ = check.collect_files([root], options)
        for path in found:
            if check.language_of(path) == "nki" and path not in seen:
                seen.add(path)
                files.append(path)
    return files


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _read(path: str) -> bytes | None:
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import nki_assist.check as check

    try:
        return check.read_regular(path, check.CheckOptions().max_file_bytes)
    except Exception:  # noqa: BLE001 - unreadable: not in the project, as in `check`
        return None


def _index_path(path: str):
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import nki_assist.check as check
    from nki_assist.project import index_module

    data = _read(path)
    return index_module(path, check.decode(data)[0]) if data is not None else None


def _index_files(files: list[str], roots: list[str]) -> dict[str, tuple[Any, tuple[int, int]]]:
    """path -> (index, stamp) of each readable file: from `check`'s cache of the first folder when it holds the
    entry (`check` ran there), else indexed here (and stored when that cache exists)."""
    # deferred: the server answers `initialize` before the engine is imported (start-up time)
    import nki_assist.check as check
    from nki_assist.project import index_module

    stamps, sources = {}, {}
    for path in files:
        stamp = _stamp(path)
        data = _read(path) if stamp is not None else None
        if data is not None:
            stamps[path], sources[path] = stamp, data
    cache = _index_cache(roots[0]) if roots else None
    known = {}
    if cache is not None:
        try:
            known = check.cached_indexes(sources, cache)  # check's index cache, read as check reads it
        except Exception:  # noqa: BLE001 - a cache problem only costs time
            known = {}
    out = {}
    for path, data in sources.items():
        info = known.get(path)
        if info is None:
            info = index_module(path, check.decode(data)[0])
            if cache is not None:
                try:
                    check.store_index(cache, path, data, info)
                except Exception:  # noqa: BLE001
                    pass
        out[path] = (info, stamps[path])
    return out


def _index_cache(root: str):
    """`check`'s cache for the folder, only when it exists already: the server never creates one in a workspace."""
    try:
        # deferred: the server answers `initialize` before the engine is imported (start-up time)
        import nki_assist.check as check
        from nki_assist.check import CheckCache, default_cache_dir
        from nki_assist.config import load_config

        config = load_config(root)
        options = check.options_from_config(config)
        top = default_cache_dir(getattr(config, "root", None) or root)
        return CheckCache(top, options) if top.is_dir() else None
    except Exception:  # noqa: BLE001
        return None
