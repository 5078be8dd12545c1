"""Which files `check` reads: directory walks that honour `.gitignore` and `exclude`, and the globs of
`per-file-ignores`, all with git's wildmatch rules (via `pathspec`).

- `*` and `?` never match `/`; `**` matches any number of directories; a pattern without `/` matches the
  name at any depth; a pattern with a `/` is anchored at the project root (the pyproject.toml's folder,
  or the working directory without a config).
- `.gitignore` files are honoured in the walked folders and, inside a git work tree, in the folders above
  up to its root, as git does (deeper files win, `!` re-includes); `respect-gitignore = false` or
  `--no-respect-gitignore` turns that off.
- A file named on the command line is always checked: excludes and `.gitignore` prune walks only.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

# pathspec is imported where a pattern or a .gitignore file is met: a walk of a tree with neither (and a
# fully cached run) does not pay for it (start-up time).

SKIP_DIRS = {".venv", "venv", "node_modules", "__pycache__", "site-packages"}
_WILD = set("*?[")


def relative_to_root(path: str, root: str | None) -> str:
    """`path` relative to the project root (or the working directory) in `/` form; the path as given
    when it lies outside."""
    base = Path(root or os.getcwd()).absolute()
    try:
        return Path(path).absolute().relative_to(base).as_posix()
    except ValueError:
        return Path(path).as_posix().lstrip("/")


@lru_cache(maxsize=1)
def _pattern_class():
    """pathspec's gitignore pattern (the same regexes under both names): `GitIgnoreSpecPattern` since
    pathspec 1.0, where `GitWildMatchPattern` is deprecated (a DeprecationWarning on every run)."""
    # deferred: see the note at the imports
    try:
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern
    except ImportError:  # pathspec 0.12
        from pathspec.patterns.gitwildmatch import GitWildMatchPattern as GitIgnoreSpecPattern
    return GitIgnoreSpecPattern


@lru_cache(maxsize=256)
def _file_pattern(pattern: str):
    regex, include = _pattern_class().pattern_to_regex(pattern)
    if regex is None:
        return None
    last = pattern.rstrip("/").rsplit("/", 1)[-1]
    # `tests/*` must not match tests/sub/k.py (`*` does not cross `/`); `tests/` and `gen` name folders
    # whose files they cover, as in .gitignore
    covers_folder = pattern.endswith("/") or not (_WILD & set(last))
    return re.compile(regex), covers_folder


def glob_matches(pattern: str, rel_path: str) -> bool:
    """Does a per-file-ignores pattern match a file (its `/`-separated path relative to the root)?"""
    compiled = _file_pattern(pattern)
    if compiled is None:
        return False
    regex, covers_folder = compiled
    m = regex.match(rel_path)
    return bool(m) and (covers_folder or m.groupdict().get("ps_d") is None)


class _Ignores:
    """The .gitignore specs that apply below one folder, deepest last."""

    def __init__(self, specs: tuple[tuple[str, Any], ...] = ()):
        self.specs = specs

    def below(self, folder: str) -> "_Ignores":
        spec = _read_gitignore(folder)
        return _Ignores(self.specs + ((folder, spec),)) if spec is not None else self

    def ignored(self, path: str, is_dir: bool) -> bool:
        for base, spec in reversed(self.specs):
            rel = os.path.relpath(path, base).replace(os.sep, "/") + ("/" if is_dir else "")
            result = spec.check_file(rel)
            if result.include is not None:
                return bool(result.include)
        return False


def _read_gitignore(folder: str):
    """The folder's .gitignore as a pathspec GitIgnoreSpec, None when it has none (or an empty one)."""
    try:
        with open(os.path.join(folder, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    if not any(line.strip() for line in lines):
        return None
    # deferred: see the note at the imports
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ancestor_ignores(top: str) -> _Ignores:
    """.gitignore files above `top` up to the root of the git work tree holding it (none outside one)."""
    here = Path(top).absolute()
    chain = []
    for folder in here.parents:
        chain.append(folder)
        if (folder / ".git").exists():
            break
    else:
        return _Ignores()
    ignores = _Ignores()
    for folder in reversed(chain):
        ignores = ignores.below(str(folder))
    return ignores


def walk(top: str, suffix_ok, excludes: list[str], root: str | None, respect_gitignore: bool = True,
         unreadable: list[tuple[str, str]] | None = None) -> list[str]:
    """Files under `top` whose name `suffix_ok` accepts, sorted per folder; hidden folders, virtualenvs,
    node_modules, excluded and git-ignored paths are pruned. A folder that cannot be listed is appended to
    `unreadable` as (folder, why): its files were not checked, so the run is incomplete (issue 44)."""
    exclude = None
    if excludes:
        # deferred: see the note at the imports
        import pathspec

        exclude = pathspec.GitIgnoreSpec.from_lines(excludes)
    out: list[str] = []
    start = _ancestor_ignores(top) if respect_gitignore else _Ignores()
    stack = [(top, start)]
    seen: set[tuple[int, int]] = set()
    while stack:
        folder, ignores = stack.pop()
        try:
            st = os.stat(folder)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) in seen:  # a symlink loop
            continue
        seen.add((st.st_dev, st.st_ino))
        if respect_gitignore:
            ignores = ignores.below(folder)
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if unreadable is not None:
                unreadable.append((folder, exc.strerror or str(exc)))
            continue
        subdirs = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)  # like os.walk: symlinked folders are not entered
            except OSError:
                continue
            full = os.path.join(folder, entry.name)
            if is_dir:
                if (entry.name.startswith(".") or entry.name in SKIP_DIRS
                        or os.path.exists(os.path.join(full, "pyvenv.cfg"))):
                    continue
            elif not suffix_ok(entry.name):
                continue
            if exclude is not None and exclude.match_file(relative_to_root(full, root) + ("/" if is_dir else "")):
                continue
            if respect_gitignore and ignores.ignored(full, is_dir):
                continue
            if is_dir:
                subdirs.append((full, ignores))
            else:
                out.append(full)
        stack.extend(reversed(subdirs))  # depth first, in name order
    return out
