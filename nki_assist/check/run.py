"""Checking many files: `collect_files` walks the paths, `check_paths` builds the project model and checks
every file in forked workers (one set of workers indexes and checks; each file parsed once), with the cache."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from ..api.version import resolve_nki_version
from .engine import build_project, check_bytes, check_file
from .options import CheckOptions, language_of
from .read import _read, decode
from .results import CheckReport, FileResult
from .versioned import record_versions


def _walk(directory: str, options: CheckOptions, unreadable: list[tuple[str, str]] | None = None) -> list[str]:
    # deferred: pathspec loads only for directory walks
    from .walk import walk

    return walk(directory, language_of, list(options.exclude) + list(options.extend_exclude), options.root,
                options.respect_gitignore, unreadable)


def collect_files(paths: list[str], options: CheckOptions,
                  incomplete: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(files to check, error messages for paths that do not exist or cannot be listed). Explicit files are
    always kept. A folder below an argument that cannot be listed goes to `incomplete` ("folder: why")."""
    files, errors, seen = [], [], set()
    for p in paths:
        if os.path.isdir(p):
            unreadable: list[tuple[str, str]] = []
            candidates = _walk(p, options, unreadable)
            for folder, why in unreadable:
                if folder == p:
                    errors.append(f"{p}: cannot read directory: {why}")
                elif incomplete is not None:
                    incomplete.append(f"{folder}: cannot read directory ({why}); its files were not checked")
        elif os.path.exists(p):
            candidates = [p]
        else:
            errors.append(f"{p}: no such file or directory")
            continue
        for f in candidates:
            key = os.path.realpath(f)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, errors


def check_paths(paths: list[str], options: CheckOptions, check_one=None, *, cache=None, jobs: int | None = 1,
                lazy: bool = False) -> CheckReport:
    """Check files and directories (recursively, skipping hidden dirs, virtualenvs, node_modules, excluded
    and git-ignored paths).

    `check_one(path, options)` replaces `check_file` (`check --fix` checks and fixes; then files are checked
    one by one, without cache or pool). `cache` (a `check_cache.CheckCache`) answers unchanged files;
    the rest are checked by a pool of `jobs` processes (None: the usable cores, as the CLI does) when there
    is enough work, in-process otherwise. The default, 1, never forks: a library caller may have threads
    (a language server), and forking those is unsafe. With `lazy`, findings from the cache or a worker
    stay `LazyFinding`s."""
    report = CheckReport(target=options.target)
    files, report.errors = collect_files(paths, options, report.incomplete)
    if check_one is not None:
        if options.project is None and len(files) > 1:
            options = replace(options, project=build_project(files, options))
        for path in files:
            report.add(check_one(path, options))
        record_versions(report, options.nki_version)
        return report.finish()
    results: list[FileResult | None] = [None] * len(files)
    read: list[tuple[int, str, str, bytes]] = []  # index, path, language, bytes
    for i, path in enumerate(files):
        language = language_of(path)
        if language is None:
            results[i] = check_file(path, options)
            continue
        data = _read(path, language, options)
        if isinstance(data, FileResult):
            results[i] = data
            continue
        read.append((i, path, language, data))
    # what a file's findings depend on besides its own bytes: a version inferred from the pins, and the other
    # files of the project (roles, call sites, imported constants). An entry records the project it was
    # checked in (a digest of every NKI file's bytes: unchanged tree, entry good) and the file's slice of it
    # (`_context_digest`): after an edit elsewhere, an entry whose slice did not change is still good.
    nki_sources = {path: data for _, path, language, data in read if language == "nki"}
    in_project = options.project is None and len(nki_sources) > 1
    project_key = _project_key(nki_sources) if in_project else ""
    todo: list[tuple[int, str, bytes, str | None]] = []  # index, path, bytes, cache key
    stale: list[tuple[int, str, bytes, str, dict]] = []  # ... and an entry checked in another project
    for i, path, language, data in read:
        key = cache.key(path, data + _inferred_version_key(path, language, options)) if cache is not None else None
        entry = cache.get(key) if cache is not None else None
        if entry is not None and (language != "nki" or entry.get("project") == project_key):
            results[i] = FileResult.from_entry(entry, lazy=lazy)
        elif entry is not None and in_project and entry.get("context") == _UNREAD:
            entry["project"] = project_key  # its result read nothing of the project: good in this one too
            _store(cache, key, entry)
            results[i] = FileResult.from_entry(entry, lazy=lazy)
        elif entry is not None and in_project and entry.get("context"):
            stale.append((i, path, data, key, entry))
        else:
            todo.append((i, path, data, key))
    if todo or stale:
        # deferred: the pool module loads only when files must be checked
        from .pool import batch_gc, refreeze

        with batch_gc():
            known = cached_indexes(nki_sources, cache) if in_project and cache is not None else {}
            if not (in_project and _check_affine(nki_sources, known, todo, stale, options, results, cache, jobs,
                                                 lazy, project_key)):
                if in_project:  # the model is built only when some file must be checked
                    languages = {language_of(p) for _, p, _, _ in todo}
                    options = replace(options, project=_project_of(nki_sources, jobs, languages, cache, known))
                    refreeze()
                for i, path, data, key, entry in stale:
                    if entry["context"] == _context_digest(options.project, path):
                        entry["project"] = project_key  # the next unchanged run finds it at once
                        _store(cache, key, entry)
                        results[i] = FileResult.from_entry(entry, lazy=lazy)
                    else:
                        cache.reject()
                        todo.append((i, path, data, key))
                todo.sort()
                _check_all(todo, options, results, cache, jobs, lazy, project_key)
    for result in results:
        report.add(result)
    if cache is not None and cache.problem:
        report.notes.append(cache.problem)
    record_versions(report, options.nki_version)
    return report.finish()


def _project_key(sources: dict[str, bytes]) -> str:
    """A digest of every NKI file checked together: a file's findings may read its neighbours."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for path in sorted(sources):
        h.update(path.encode("utf-8", "surrogateescape") + b"\0" + hashlib.blake2b(sources[path]).digest())
    return h.hexdigest()


# the context an entry records when its file's result read nothing of the project (a file skipped, not checked):
# good in any project
_UNREAD = "-"


def _entry_context(project, path: str, status: str) -> str:
    return _context_digest(project, path) if status == "checked" else _UNREAD


def _context_digest(project, path: str) -> str:
    """A digest of all the project model tells one file's checks (`Project.context`: its module's facts,
    its functions' roles, callers, call-site facts and guards, imported constants, missing imports); ""
    outside a project."""
    if project is None:
        return ""
    # deferred: only a check in a project of several files needs it
    from ..project import context_digest

    return context_digest(project.context(path))


def _project_of(sources: dict[str, bytes], jobs: int | None = 1, languages: set | frozenset = frozenset(),
                cache=None, known: dict | None = None):
    """The project model of `sources`. Each module's index comes from `cache` when it has it (an edit re-indexes
    the edited file only); the others are indexed by a pool, with enough bytes and cores (their syntax trees
    stay there: each file's rules parse it again, in parallel) while this process loads the engine for
    `languages`, then indexes the modules no worker has started itself, else here: this process keeps the trees
    of what it indexed for the rules (forked workers inherit them). `known`: the indexes already read from `cache`."""
    # deferred: the project model loads only when files must be checked
    from ..project import Project, index_module
    from .pool import MIN_PARALLEL_INDEX_BYTES, run_parallel, usable_cores, worth_a_pool

    if known is None:
        known = cached_indexes(sources, cache) if cache is not None else {}
    else:
        known = dict(known)
    missing = {path: data for path, data in sources.items() if path not in known}
    jobs = usable_cores() if jobs is None else jobs
    if not worth_a_pool([len(d) for d in missing.values()], jobs, MIN_PARALLEL_INDEX_BYTES):
        for path, data in missing.items():
            known[path] = index_module(path, decode(data)[0], keep_tree=True)
            store_index(cache, path, data, known[path])
    else:
        def failed(path: str, exc: BaseException):  # a worker that died: index that file here
            info = index_module(path, decode(missing[path])[0])
            store_index(cache, path, missing[path], info)
            return info

        def here(item: tuple[str, bytes]):  # what no worker had started once the engine was loaded: trees kept
            path, data = item
            info = index_module(path, decode(data)[0], keep_tree=True)
            store_index(cache, path, data, info)
            return info

        numpy = any(b"numpy" in d for d in sources.values())
        modules = run_parallel(_index_of, list(missing.items()), cache, jobs, failed,
                               meanwhile=lambda: _load_engine(languages, numpy), helper=here)
        known.update(zip(missing, modules))
    # in the order of `sources`, as Project.build: the first of two alike module names keeps it
    return Project(known[path] for path in sources)


def _check_affine(sources: dict[str, bytes], known: dict, todo: list, stale: list, options: CheckOptions,
                  results: list, cache, jobs: int | None, lazy: bool, project_key: str) -> bool:
    """A project's files indexed and checked by one set of forked workers (check_pool.run_affine): each checks
    first the files it indexed, with the syntax trees it kept, so a file is parsed by Python once in all, where
    an index pool and a check pool parsed most files twice. The engine loads here before they fork (they inherit
    it); each worker builds the project model from every module's index; a stale entry (checked in another
    project) is kept when its worker finds the file's slice of the project unchanged. False, with nothing done,
    where it does not apply: no fork, too little to check or to index for a pool (`_project_of` and
    `_check_all` do it then)."""
    import multiprocessing

    # deferred: the pool module loads only when files must be checked
    from .pool import refreeze, run_affine, usable_cores, worth_a_pool

    jobs = usable_cores() if jobs is None else jobs
    work = [(i, path, data, key, None) for i, path, data, key in todo] + list(stale)
    missing = [(path, data) for path, data in sources.items() if path not in known]
    if "fork" not in multiprocessing.get_all_start_methods() or not worth_a_pool([len(w[2]) for w in work], jobs) \
            or not worth_a_pool([len(data) for _, data in missing], jobs):
        return False

    def index_failed(path: str, exc: BaseException):  # a worker that died: index that module here
        # deferred: the project model loads only when files must be checked
        from ..project import index_module

        info = index_module(path, decode(sources[path])[0])
        store_index(cache, path, sources[path], info)
        return info

    def check_failed(path: str, exc: BaseException) -> tuple[dict, None]:
        return FileResult(path, language_of(path), "error",
                          f"internal error: the worker checking it failed ({type(exc).__name__}: {exc})").to_entry(), None

    _load_engine({language_of(w[1]) for w in work}, any(b"numpy" in w[2] for w in work))
    refreeze()  # the engine's modules: the workers' collections never walk them
    shared = replace(options, project=_SHARED)
    _AFFINE[0] = (list(sources), known, [path for path, _ in missing], cache, project_key)
    _KEYED[0] = cache is not None
    try:
        answers = run_affine(_index_kept, missing, _affine_setup, _affine_entry,
                             [(path, data, shared, old, key) for _, path, data, key, old in work], jobs,
                             index_failed, check_failed)
    finally:
        _AFFINE[0], _KEYED[0] = None, True
    for (i, _, _, _, old), (entry, problem) in zip(work, answers):
        if problem and cache.problem is None:
            cache.problem = problem
        if old is not None:
            if entry is None:  # its slice of the project did not change: the entry stands (the worker stored it)
                old["project"] = project_key
                results[i] = FileResult.from_entry(old, lazy=lazy)
                continue
            cache.reject()
        entry["project"] = project_key
        results[i] = FileResult.from_entry(entry, lazy=lazy)
    return True


# What `_check_affine`'s forked workers inherit: (every NKI path in order, indexes read from the cache, the paths
# to index, the cache, the project's key); and, in a worker, the modules it indexed itself, with their trees.
_AFFINE: list = [None]


_KEPT: dict = {}


def _index_kept(item: tuple[str, bytes]):
    """`_check_affine`'s first job in a worker: one module's index, kept here with its syntax tree; what is sent
    to the other workers is the index without the tree."""
    path, data = item
    # deferred: light, and already loaded in a forked worker
    from ..project import index_module
    from .pool import refreeze

    info = index_module(path, decode(data)[0], keep_tree=True)
    store_index(_AFFINE[0][3], path, data, info)
    _KEPT[path] = info
    refreeze()  # the tree lives on: out of the collector's reach at once, not walked by a collection first
    return replace(info, tree=None, tree_text=None)


def _affine_setup(indexed: list, mine: set[int]) -> None:
    """In a worker between the phases: the project model of every module (each worker builds the same one), with
    the trees of the modules this worker indexed."""
    # deferred: light, and already loaded in a forked worker
    from ..project import Project
    from .pool import refreeze

    order, known, paths = _AFFINE[0][:3]
    modules = dict(known)
    for i, (path, info) in enumerate(zip(paths, indexed)):
        modules[path] = _KEPT.pop(path) if i in mine else info
    _KEPT.clear()
    _FORKED_PROJECT[0] = Project(modules[path] for path in order)
    refreeze()  # what every file reads, as a forked worker inherits it frozen


def _affine_entry(item: tuple[str, bytes, CheckOptions, dict | None, str | None]) -> tuple[dict | None, str | None]:
    """`_check_affine`'s second job: one file's entry, stored in the cache here (in parallel, not one by one by the
    parent at the end); None for a stale entry (`old`) whose file's slice of the project is the one it records, the
    entry stored again for this project. With what went wrong writing the cache, if anything."""
    path, data, options, old, key = item
    cache, project_key = _AFFINE[0][3:]
    if old is not None and old["context"] == _context_digest(_FORKED_PROJECT[0], path):
        old["project"] = project_key  # the next unchanged run finds it at once
        _store(cache, key, old)
        return None, cache.problem
    entry = _entry_of((path, data, options))
    entry["project"] = project_key
    _store(cache, key, entry)
    return entry, cache.problem if cache is not None else None


def _index_of(item: tuple[str, bytes, Any]):
    """A pool worker's job: one module's index (plain data; its syntax tree is not sent back), stored in the
    cache (the third item) when there is one."""
    path, data, cache = item
    # deferred: light, and already loaded in a forked worker
    from ..project import index_module
    from .pool import file_done

    info = index_module(path, decode(data)[0])
    store_index(cache, path, data, info)
    file_done()
    return info


def _index_key(cache, path: str, data: bytes) -> str:
    """A module's index depends on its bytes, its path, the `__init__.py` files above it (its dotted name)
    and the Python that parses it (its grammar); the tool's code keys the cache folder."""
    import sys

    # deferred: the project model loads only when files must be checked
    from ..project.index import module_name

    name, package = module_name(path)
    return cache.key(path, f"index\0{name}\0{package}\0{sys.version}\0".encode("utf-8", "surrogateescape") + data)


def cached_indexes(sources: dict[str, bytes], cache) -> dict:
    # deferred: the project model loads only when files must be checked
    from ..project.index import module_from_json

    out = {}
    for path, data in sources.items():
        entry = cache.read(_index_key(cache, path, data))
        if entry is not None:
            try:
                out[path] = module_from_json(entry["index"])
            except (KeyError, TypeError, ValueError):  # a damaged entry is a miss
                continue
    return out


def store_index(cache, path: str, data: bytes, info) -> None:
    if cache is None:
        return
    # deferred: the project model loads only when files must be checked
    from ..project.index import module_to_json
    from .cache import ENTRY_VERSION

    cache.put(_index_key(cache, path, data), {"v": ENTRY_VERSION, "index": module_to_json(info)})


def _inferred_version_key(path: str, language: str, options: CheckOptions) -> bytes:
    """An NKI file's target version when it comes from the project's pins, not the settings (which key the
    cache folder): a changed pin must not serve results checked for the old version."""
    if language != "nki" or options.nki_version:
        return b""
    # the range a pin admits and whether the version is a guess change the findings too (check/versioned.py)
    return ("\0nki-version=" + resolve_nki_version(None, path).key()).encode()


def _check_all(todo, options: CheckOptions, results: list, cache, jobs: int | None, lazy: bool,
               project_key: str = "") -> None:
    # deferred: the pool module loads only when files must be checked
    from .pool import refreeze, run_parallel, usable_cores, worth_a_pool

    jobs = usable_cores() if jobs is None else jobs
    if worth_a_pool([len(d) for _, _, d, _ in todo], jobs):
        def failed(path: str, exc: BaseException) -> dict:
            return FileResult(path, language_of(path), "error",
                              f"internal error: the worker checking it failed ({type(exc).__name__}: {exc})").to_entry()

        _load_engine({language_of(p) for _, p, _, _ in todo}, any(b"numpy" in d for _, _, d, _ in todo))
        refreeze()  # the engine's modules too: the workers' collections never walk them
        shared = options
        if options.project is not None:
            _FORKED_PROJECT[0], shared = options.project, replace(options, project=_SHARED)
        _KEYED[0] = cache is not None
        try:
            entries = run_parallel(_entry_of, [(p, d) for _, p, d, _ in todo], shared, jobs, failed)
        finally:
            _FORKED_PROJECT[0], _KEYED[0] = None, True
        for (i, _, _, key), entry in zip(todo, entries):
            entry["project"] = project_key
            _store(cache, key, entry)
            results[i] = FileResult.from_entry(entry, lazy=lazy)
        return
    # deferred: the pool module loads only when files must be checked (already loaded here)
    from .pool import file_done

    for i, path, data, key in todo:
        result = check_bytes(path, data, options)
        result.parsed = None  # a report of many files keeps findings, not every file's syntax model
        if cache is not None:
            _store(cache, key, {**result.to_entry(), "project": project_key,
                                "context": _entry_context(options.project, path, result.status)})
        results[i] = result
        file_done()


def _load_engine(languages: set[str | None], numpy: bool = False) -> None:
    """Import the front ends and rules once, before the pool forks, so workers start with them loaded
    instead of each importing them again (CPU time on a shared machine). `numpy`: some file names NumPy,
    which NKI518 imports to look its attributes up (~0.1 s in each worker otherwise)."""
    # deferred: only a run with files to check pays for the engine
    from .. import findings  # noqa: F401

    if "nki" in languages:
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from ..parse import nki  # noqa: F401
        from ..rules.nki import run as nki_rules

        nki_rules.load_checks()

        if numpy:
            # deferred: only for files that name NumPy (NKI518 reads its attributes)
            import numpy as _numpy  # noqa: F401
    if "cuda" in languages:
        # deferred: a language's grammar and rules load only when a file of it is checked (start-up time)
        from ..parse import cuda  # noqa: F401
        from ..rules.cuda import checks as cuda_rules  # noqa: F401


# The project model handed to forked pool workers by inheritance, not pickled with every file's job.
_FORKED_PROJECT: list = [None]


_SHARED = "@forked-project"


# whether the workers' entries go to a cache (which keys them with the file's slice of the project), likewise
_KEYED: list = [True]


def _entry_of(item: tuple[str, bytes, CheckOptions]) -> dict:
    """A pool worker's job: one file's result as its JSON entry."""
    path, data, options = item
    # deferred: light, and already loaded in a forked worker
    from .pool import file_done

    if options.project == _SHARED:  # a spawned (not forked) worker has none: each file alone
        options = replace(options, project=_FORKED_PROJECT[0])
    entry = check_bytes(path, data, options).to_entry()
    if _KEYED[0]:  # the worker has the project; the parent keys the entry with the file's slice of it
        entry["context"] = _entry_context(options.project, path, entry["status"])
    file_done()
    return entry


def _store(cache, key: str | None, entry: dict) -> None:
    # errors and crashes are checked again next time: they may not recur, and must stay loud
    if cache is not None and key is not None and entry["status"] != "error" and not entry.get("crashed"):
        cache.put(key, entry)
