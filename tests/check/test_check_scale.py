"""Repository-scale check (issue 30 item 1): a process pool gives the in-process findings in a stable
order; the persistent cache answers unchanged files with the same findings, is keyed by every setting,
the file's bytes and path and the tool's code, survives concurrent writers, and a fully cached run
imports no pydantic."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import nki_assist.check.run as check_mod
import nki_assist.check.cache as cache_mod
import nki_assist.check.pool as pool_mod
from nki_assist.check import CheckOptions, check_paths
from nki_assist.check.cache import CheckCache, LazyFinding, settings_digest
from nki_assist.findings import Finding

ROOT = Path(__file__).resolve().parents[2]
RULE_FIXTURES = ROOT / "tests" / "fixtures" / "rules"


def places(report):
    return [(f.file, f.line, f.column, f.rule, f.message, f.severity.value) for f in report.findings]


def statuses(report):
    return [(r.path, r.status, r.reason) for r in report.files]


@pytest.fixture
def force_pool(monkeypatch):
    """Any amount of work goes to the pool; counts the pool runs (the files checked by each)."""
    calls = []
    real, real_affine = pool_mod.run_parallel, pool_mod.run_affine

    def spy(*args, **kwargs):
        if args[0] is not check_mod._index_of:  # the project model's index pool is counted apart
            calls.append(len(args[1]))
        return real(*args, **kwargs)

    def spy_affine(first, first_items, setup, second, second_items, *args, **kwargs):
        calls.append(len(second_items))
        return real_affine(first, first_items, setup, second, second_items, *args, **kwargs)

    monkeypatch.setattr(pool_mod, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(pool_mod, "run_parallel", spy)
    monkeypatch.setattr(pool_mod, "run_affine", spy_affine)
    return calls


def test_pool_gives_the_in_process_findings_in_the_same_order(force_pool):
    serial = check_paths([str(RULE_FIXTURES)], CheckOptions(), jobs=1)
    parallel = check_paths([str(RULE_FIXTURES)], CheckOptions(), jobs=2)
    assert force_pool == [len(serial.files)]  # one pool run over every file; jobs=1 stayed in-process
    assert len(serial.findings) > 100
    assert places(parallel) == places(serial)
    assert statuses(parallel) == statuses(serial)
    assert [f.id for f in parallel.findings] == [f"F{i}" for i in range(1, len(serial.findings) + 1)]
    assert all(isinstance(f, Finding) for f in parallel.findings)  # lazy=False: real Findings


def test_results_keep_input_order_whatever_finishes_first(force_pool, tmp_path):
    small = "import neuronxcc.nki as nki\n"
    big = (RULE_FIXTURES / "NKI103" / "pos_legacy.py").read_text(encoding="utf-8")
    names = ["a_small.py", "b_big.py", "c_small.py", "d_big.py"]
    for name in names:
        (tmp_path / name).write_text(big * 30 if "big" in name else small, encoding="utf-8")
    report = check_paths([str(tmp_path)], CheckOptions(), jobs=2)
    assert [Path(r.path).name for r in report.files] == names
    assert force_pool == [4]


def test_small_work_stays_in_process(monkeypatch, tmp_path):
    monkeypatch.setattr(pool_mod, "run_parallel", lambda *a, **k: pytest.fail("pool started for tiny input"))
    for i in range(3):
        (tmp_path / f"k{i}.py").write_text("import neuronxcc.nki as nki\n", encoding="utf-8")
    assert check_paths([str(tmp_path)], CheckOptions(), jobs=2).files_checked == 3


def test_a_worker_that_dies_costs_its_file_only_and_the_run_is_incomplete(force_pool, tmp_path, monkeypatch):
    for name in ("a.py", "die.py"):
        (tmp_path / name).write_text("import neuronxcc.nki as nki\n", encoding="utf-8")
    monkeypatch.setattr(check_mod, "_entry_of", _dying_entry)
    report = check_paths([str(tmp_path)], CheckOptions(), jobs=2)
    assert report.incomplete and all("worker checking it failed" in line for line in report.incomplete)
    assert any(line.startswith(str(tmp_path / "die.py")) for line in report.incomplete)


def test_without_a_cache_workers_do_not_digest_project_slices(force_pool, tmp_path, monkeypatch):
    """A file's slice of the project is digested only to key its cache entry: `--no-cache` workers skip it."""
    (tmp_path / "a.py").write_text(IMPORTER, encoding="utf-8")
    (tmp_path / "b.py").write_text("TILE = 128\n", encoding="utf-8")

    def boom(*args):
        raise RuntimeError("digested")

    monkeypatch.setattr(check_mod, "_entry_context", boom)
    plain = check_paths([str(tmp_path)], CheckOptions(), jobs=2)
    assert force_pool == [2] and plain.files_checked == 1 and not plain.incomplete
    opts = CheckOptions()
    cached = check_paths([str(tmp_path)], opts, cache=CheckCache(tmp_path / ".c", opts), jobs=2)
    assert len(cached.incomplete) == 2 and all("digested" in line for line in cached.incomplete)


_REAL_ENTRY = check_mod._entry_of


def _dying_entry(item):
    if item[0].endswith("die.py"):
        os._exit(3)
    return _REAL_ENTRY(item)


def _two_packages(tmp_path: Path) -> dict[str, bytes]:
    """Every rule fixture plus two copies of one small package (alike module names: the first one keeps its
    name, so the order of indexing matters), as check_paths reads them."""
    sources = {str(p): p.read_bytes() for p in sorted(RULE_FIXTURES.rglob("*.py"))}
    for copy in ("a", "b"):
        pkg = tmp_path / copy / "pkg"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("", encoding="utf-8")
        (pkg / "consts.py").write_text("TILE = 128\n", encoding="utf-8")
        (pkg / "kern.py").write_text("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
                                     "from .consts import TILE, NOPE\n\n\ndef helper(x, n):\n"
                                     "    assert n % TILE == 0\n    return nl.load(x)\n\n\n@nki.jit\n"
                                     "def k(a):\n    t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
                                     "    return helper(t, 256)\n", encoding="utf-8")
        sources.update({str(p): p.read_bytes() for p in sorted(pkg.glob("*.py"))})
    return sources


def test_a_pool_indexes_the_project_this_process_would_build(tmp_path, monkeypatch):
    """With enough bytes the modules are indexed by the pool (and the engine loads here meanwhile): every
    file's slice of that project is the one an in-process build gives, ambiguous names included."""
    from nki_assist.project import context_digest

    sources = _two_packages(tmp_path)
    runs: list[str] = []
    real = pool_mod.run_parallel

    def spy(work, items, *args, **kwargs):
        runs.append(work.__name__)
        return real(work, items, *args, **kwargs)

    here = check_mod._project_of(sources, jobs=2)
    assert runs == []  # below MIN_PARALLEL_INDEX_BYTES: built here, with the trees kept
    monkeypatch.setattr(pool_mod, "MIN_PARALLEL_INDEX_BYTES", 0)
    monkeypatch.setattr(pool_mod, "run_parallel", spy)
    pooled = check_mod._project_of(sources, jobs=2, languages={"nki"})
    assert runs == ["_index_of"]
    assert list(pooled.modules) == list(here.modules) and pooled.ambiguous == here.ambiguous
    second = "pkg.kern@" + str(tmp_path / "b" / "pkg" / "kern.py")
    assert {"pkg", "pkg.consts", "pkg.kern"} <= here.ambiguous and second in here.modules
    assert pooled.roles == here.roles and pooled.callers == here.callers
    digests = [(context_digest(here.context(p)), context_digest(pooled.context(p))) for p in sources]
    assert all(a == b for a, b in digests) and len({a for a, _ in digests}) > 50
    # the digest leaves out the module facts a file's text decides: compare those directly
    from nki_assist.project.index import module_to_json

    assert [module_to_json(m) for m in pooled.modules.values()] == [module_to_json(m) for m in here.modules.values()]
    # the trees of what a worker indexed stay there; this process keeps those of the modules it indexed itself
    # (the ones no worker had started once the engine was loaded), of the very text checked
    kept = [m for m in pooled.modules.values() if m.tree is not None]
    assert kept and all(m.tree_text == sources[m.path].decode("utf-8") for m in kept)
    assert sum(m.tree is not None for m in here.modules.values()) > 50


def _slow_size(item):
    import time

    time.sleep(0.005)
    return "worker", len(item[1])


@pytest.mark.parametrize("jobs", [2, 3])
def test_this_process_helps_with_the_items_no_worker_has_started(jobs):
    """With a helper, the pool has one worker less and this process, once `meanwhile` is done, takes the items no
    worker started, smallest first (workers start with the biggest): every item once, results in input order."""
    import time

    items = [(f"f{i}", b"x" * (10 + (i * 7) % 60)) for i in range(60)]
    out = pool_mod.run_parallel(_slow_size, items, None, jobs, lambda path, exc: pytest.fail(str(exc)),
                                meanwhile=lambda: time.sleep(0.05), helper=lambda item: ("here", len(item[1])))
    assert [size for _, size in out] == [len(data) for _, data in items]
    here = [size for who, size in out if who == "here"]
    worker = [size for who, size in out if who == "worker"]
    assert here and worker and max(here) <= min(worker)


def test_a_dying_index_worker_costs_nothing(tmp_path, monkeypatch):
    """A module whose index worker died is indexed here: the project and the findings are complete."""
    sources = _two_packages(tmp_path)
    here = check_mod._project_of(sources, jobs=1)
    monkeypatch.setattr(pool_mod, "MIN_PARALLEL_INDEX_BYTES", 0)
    monkeypatch.setattr(check_mod, "_index_of", _dying_index)
    pooled = check_mod._project_of(sources, jobs=2)
    assert list(pooled.modules) == list(here.modules) and pooled.roles == here.roles
    serial = check_paths([str(tmp_path / "a")], CheckOptions(), jobs=1)
    parallel = check_paths([str(tmp_path / "a")], CheckOptions(), jobs=2)
    assert places(parallel) == places(serial) and "NKI003" in {f.rule for f in serial.findings}
    assert not parallel.incomplete


def _dying_index(item):
    os._exit(3)  # the first module the worker takes (this process may index the rest itself)


# --- the cache ---------------------------------------------------------------------------------------

def test_second_run_is_answered_from_the_cache_with_equal_findings(tmp_path):
    opts = CheckOptions()
    cache = CheckCache(tmp_path / "c", opts)
    cold = check_paths([str(RULE_FIXTURES)], opts, cache=cache, jobs=1)
    assert cache.hits == 0 and cache.misses == cold.files_checked + cold.files_skipped
    warm_cache = CheckCache(tmp_path / "c", opts)
    warm = check_paths([str(RULE_FIXTURES)], opts, cache=warm_cache, lazy=True, jobs=1)
    assert warm_cache.misses == 0 and warm_cache.hits == len(cold.files)
    assert places(warm) == places(cold) and statuses(warm) == statuses(cold)
    assert all(isinstance(f, LazyFinding) for f in warm.findings)
    # a LazyFinding becomes the real Finding on demand, equal to the cold one
    assert [f.real() for f in warm.findings] == [f for f in cold.findings]
    assert [f.to_json() for f in warm.findings] == [f.to_json() for f in cold.findings]


def test_an_edited_file_is_checked_again_others_are_not(tmp_path):
    """Files checked alone: an edit re-checks only the edited file."""
    src = (RULE_FIXTURES / "NKI103" / "pos_legacy.py").read_text(encoding="utf-8")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(src, encoding="utf-8")
    opts = CheckOptions()
    for name in ("a.py", "b.py"):
        check_paths([str(tmp_path / name)], opts, cache=CheckCache(tmp_path / ".c", opts), jobs=1)
    (tmp_path / "b.py").write_text(src.replace("1024", "512"), encoding="utf-8")
    cache = CheckCache(tmp_path / ".c", opts)
    reports = [check_paths([str(tmp_path / name)], opts, cache=cache, jobs=1) for name in ("a.py", "b.py")]
    assert (cache.hits, cache.misses) == (1, 1)
    assert {Path(f.file).name for r in reports for f in r.findings if f.rule == "NKI103"} == {"a.py"}


def test_files_checked_together_are_one_project_in_the_cache(tmp_path):
    """NKI files checked together read each other (roles, call sites, imported constants); an unchanged
    re-run is answered from the cache, and an edit re-checks the edited file and those whose slice of the
    project changed, not the others."""
    src = (RULE_FIXTURES / "NKI103" / "pos_legacy.py").read_text(encoding="utf-8")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(src, encoding="utf-8")
    opts = CheckOptions()
    check_paths([str(tmp_path)], opts, cache=CheckCache(tmp_path / ".c", opts), jobs=1)
    again = CheckCache(tmp_path / ".c", opts)
    check_paths([str(tmp_path)], opts, cache=again, jobs=1)
    assert (again.hits, again.misses) == (2, 0)
    (tmp_path / "b.py").write_text(src.replace("1024", "512"), encoding="utf-8")
    cache = CheckCache(tmp_path / ".c", opts)
    report = check_paths([str(tmp_path)], opts, cache=cache, jobs=1)
    assert (cache.hits, cache.misses) == (1, 1)  # a.py reads nothing of b.py: its entry stands
    assert {Path(f.file).name for f in report.findings if f.rule == "NKI103"} == {"a.py"}
    assert places(report) == places(check_paths([str(tmp_path)], opts, jobs=1))
    fast = CheckCache(tmp_path / ".c", opts)  # the kept entry now names the new project: found at once
    check_paths([str(tmp_path)], opts, cache=fast, jobs=1)
    assert (fast.hits, fast.misses) == (2, 0)


IMPORTER = """import nki
import nki.language as nl
from b import TILE


@nki.jit
def kernel(x):
    out = nl.ndarray((TILE, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((TILE, 512), dtype=nl.float32, buffer=nl.sbuf)
    nl.store(out, value=t)
    return out
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_edit_rechecks_the_files_that_read_it(tmp_path, monkeypatch, jobs):
    """a.py's partition size comes from b.py: changing it re-checks a.py (with b.py's new value), a comment
    in b.py does not; every run's findings are a cold run's."""
    monkeypatch.setattr(pool_mod, "MIN_PARALLEL_BYTES", 0)
    (tmp_path / "a.py").write_text(IMPORTER, encoding="utf-8")
    (tmp_path / "b.py").write_text("TILE = 128\n", encoding="utf-8")
    opts = CheckOptions()

    def run():
        cache = CheckCache(tmp_path / ".c", opts)
        report = check_paths([str(tmp_path)], opts, cache=cache, jobs=jobs)
        assert places(report) == places(check_paths([str(tmp_path)], opts, jobs=1))
        return (cache.hits, cache.misses), sorted(f.rule for f in report.findings)

    assert run() == ((0, 2), ["NKI202"])
    (tmp_path / "b.py").write_text("TILE = 256\n", encoding="utf-8")
    assert run() == ((0, 2), ["NKI101", "NKI202"])  # a.py checked again: its tile now has 256 partitions
    (tmp_path / "b.py").write_text("# the tile height\nTILE = 256\n", encoding="utf-8")
    assert run() == ((1, 1), ["NKI101", "NKI202"])  # same slice for a.py: from the cache
    assert run() == ((2, 0), ["NKI101", "NKI202"])


def test_a_skipped_files_entry_is_good_in_any_project(tmp_path, monkeypatch):
    """A file skipped (no NKI import) read nothing of the project: after an edit elsewhere its entry is
    answered without its slice of the project being computed, or the project built for it."""
    (tmp_path / "a.py").write_text(IMPORTER, encoding="utf-8")
    (tmp_path / "b.py").write_text("TILE = 128\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("import os\nTILE = 64\n", encoding="utf-8")
    (tmp_path / "d.py").write_text(IMPORTER, encoding="utf-8")
    opts = CheckOptions()
    check_paths([str(tmp_path)], opts, cache=CheckCache(tmp_path / ".c", opts), jobs=1)
    sliced: list[str] = []
    real = check_mod._context_digest
    monkeypatch.setattr(check_mod, "_context_digest", lambda project, path: sliced.append(path) or real(project, path))
    (tmp_path / "a.py").write_text(IMPORTER + "\n# edited\n", encoding="utf-8")
    cache = CheckCache(tmp_path / ".c", opts)
    report = check_paths([str(tmp_path)], opts, cache=cache, jobs=1)
    assert (cache.hits, cache.misses) == (3, 1) and statuses(report) == statuses(check_paths([str(tmp_path)], opts))
    assert [r.status for r in report.files] == ["checked", "skipped", "skipped", "checked"]
    assert sorted(Path(p).name for p in sliced) == ["a.py", "d.py"]  # a.py's new entry; d.py's stale one
    again = CheckCache(tmp_path / ".c", opts)
    check_paths([str(tmp_path)], opts, cache=again, jobs=1)
    assert (again.hits, again.misses) == (4, 0)


def test_an_edit_reindexes_the_edited_module_only(tmp_path, monkeypatch):
    """The cache keeps each module's index: a re-run after an edit indexes the edited file, reads the others'
    (equal to a fresh index), and its findings are a cold run's; a damaged index entry is indexed again."""
    import nki_assist.project as project_mod

    (tmp_path / "a.py").write_text(IMPORTER, encoding="utf-8")
    (tmp_path / "b.py").write_text("TILE = 128\n", encoding="utf-8")
    (tmp_path / "d.py").write_text(IMPORTER.replace("kernel", "other"), encoding="utf-8")
    opts = CheckOptions()
    indexed: list[str] = []
    real = project_mod.index_module
    monkeypatch.setattr(project_mod, "index_module",
                        lambda path, *a, **k: indexed.append(Path(path).name) or real(path, *a, **k))

    def run():
        indexed.clear()
        report = check_paths([str(tmp_path)], opts, cache=CheckCache(tmp_path / ".c", opts), jobs=1)
        done = sorted(indexed)
        assert places(report) == places(check_paths([str(tmp_path)], opts, jobs=1))
        return done, sorted(f.rule for f in report.findings)

    assert run()[0] == ["a.py", "b.py", "d.py"]
    (tmp_path / "b.py").write_text("TILE = 256\n", encoding="utf-8")
    assert run() == (["b.py"], ["NKI101", "NKI101", "NKI202", "NKI202"])  # both importers see the new value
    for entry in (tmp_path / ".c").rglob("*.json"):
        if '"index"' in entry.read_text(encoding="utf-8") and "d.py" in entry.read_text(encoding="utf-8"):
            entry.write_text(f'{{"v": {cache_mod.ENTRY_VERSION}, "index": {{"name": 1}}}}', encoding="utf-8")
    (tmp_path / "a.py").write_text(IMPORTER + "\n# edited\n", encoding="utf-8")
    assert run()[0] == ["a.py", "d.py"]


def test_a_modules_index_survives_its_json_form():
    """What the cache keeps of a module is the index itself: equal after the JSON round trip, for every rule
    fixture and the public kernels when present."""
    from nki_assist.project.index import index_module, module_from_json, module_to_json

    sys.path.insert(0, str(ROOT / "tests" / "conformance"))
    try:
        from corpora import NKI_LIBRARY, SAMPLES_HEAD, nki_sources
    finally:
        sys.path.remove(str(ROOT / "tests" / "conformance"))
    fixtures = [(str(p), p.read_text(encoding="utf-8")) for p in sorted(RULE_FIXTURES.rglob("*.py"))]
    public = [(n, t) for _, n, t in nki_sources(NKI_LIBRARY, SAMPLES_HEAD)]  # none on a clone without ../shared

    def round_trip(texts) -> int:
        functions = 0
        for path, text in texts:
            info = index_module(path, text)
            back = module_from_json(json.loads(json.dumps(module_to_json(info))))
            assert back == info and list(back.functions) == list(info.functions), path
            functions += len(info.functions)
        return functions

    assert round_trip(fixtures + [("bad.py", "X = 1\ndef f(:\n")]) > 250  # the fixtures alone: 318 in May 2026
    assert not public or round_trip(public) > 500


def test_every_setting_is_part_of_the_key():
    """Changing any field of CheckOptions, including ones added after this test, changes the folder."""
    base = CheckOptions()
    seen = {settings_digest(base)}
    for f in dataclasses.fields(CheckOptions):
        value = getattr(base, f.name)
        if isinstance(value, bool):
            changed = not value
        elif isinstance(value, int):
            changed = value + 1
        elif isinstance(value, str):
            changed = value + "x"
        elif isinstance(value, list):
            changed = value + ["NKI1"]
        elif isinstance(value, dict):
            changed = {**value, "x/*": ["NKI1"]}
        else:  # None
            changed = ["NKI1"] if f.name == "select" else "/elsewhere"
        digest = settings_digest(dataclasses.replace(base, **{f.name: changed}))
        assert digest not in seen, f.name
        seen.add(digest)


def test_a_new_setting_needs_no_cache_code(monkeypatch):
    @dataclasses.dataclass
    class Later(CheckOptions):
        nki_version: str = "0.6"

    assert settings_digest(Later()) != settings_digest(CheckOptions())
    assert settings_digest(Later(nki_version="0.5")) != settings_digest(Later())


def test_the_tools_code_is_part_of_the_key(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "rule.py").write_text("x = 1\n", encoding="utf-8")
    monkeypatch.setattr(cache_mod, "_PACKAGE_DIR", pkg)
    cache_mod.code_fingerprint.cache_clear()
    try:
        first = settings_digest(CheckOptions())
        (pkg / "rule.py").write_text("x = 22\n", encoding="utf-8")  # an edited rule
        cache_mod.code_fingerprint.cache_clear()
        assert settings_digest(CheckOptions()) != first
    finally:
        cache_mod.code_fingerprint.cache_clear()


def test_path_and_bytes_are_part_of_the_key():
    assert CheckCache.key("a.py", b"x") != CheckCache.key("b.py", b"x")
    assert CheckCache.key("a.py", b"x") != CheckCache.key("a.py", b"y")


def test_corrupt_entry_is_a_miss_and_is_replaced(tmp_path):
    (tmp_path / "k.py").write_text((RULE_FIXTURES / "NKI103" / "pos_legacy.py").read_text(), encoding="utf-8")
    opts = CheckOptions()
    first = check_paths([str(tmp_path / "k.py")], opts, cache=CheckCache(tmp_path / "c", opts))
    [entry] = list((tmp_path / "c").glob("*/*.json"))
    entry.write_text('{"v": 1, "findings": [', encoding="utf-8")
    cache = CheckCache(tmp_path / "c", opts)
    again = check_paths([str(tmp_path / "k.py")], opts, cache=cache)
    assert cache.misses == 1 and places(again) == places(first)
    assert json.loads(entry.read_bytes().partition(b"\n")[2])["v"] == cache_mod.ENTRY_VERSION  # after its digest line


def test_unwritable_cache_costs_only_speed(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    (tmp_path / "k.py").write_text((RULE_FIXTURES / "NKI103" / "pos_legacy.py").read_text(), encoding="utf-8")
    opts = CheckOptions()
    report = check_paths([str(tmp_path / "k.py")], opts, cache=CheckCache(blocker / "c", opts))
    assert places(report) == places(check_paths([str(tmp_path / "k.py")], opts)) and report.findings
    assert any(n.startswith(f"cache not written to {blocker / 'c'}") for n in report.notes)


def test_errors_and_crashes_are_not_cached(fake_front_ends, tmp_path):
    (tmp_path / "k.py").write_text("import nki\nCRASH\n", encoding="utf-8")
    opts = CheckOptions()
    cache = CheckCache(tmp_path / "c", opts)
    report = check_paths([str(tmp_path / "k.py")], opts, cache=cache)
    assert report.errors and not list((tmp_path / "c").glob("*/*.json"))


def _writer(args):
    folder, n, entry = args
    cache = CheckCache(folder, CheckOptions())
    for _ in range(n):
        cache.put("same-key", entry)
    return cache.problem


def test_concurrent_writers_never_leave_a_torn_entry(tmp_path):
    entry = {"v": cache_mod.ENTRY_VERSION, "path": "k.py", "language": "nki", "status": "checked", "reason": "",
             "findings": [], "suppressed": [], "notes": ["x" * 200_000], "cuda_facts": None, "unchecked": False,
             "crashed": []}
    folder = tmp_path / "c"
    target = folder / settings_digest(CheckOptions()) / "same-key.json"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        pending = pool.map_async(_writer, [(folder, 40, entry)] * 4)
        reads = 0
        while not pending.ready():
            if target.exists():
                # whole, never half-written: its digest line checks out
                assert CheckCache(folder, CheckOptions()).read("same-key") == entry
                reads += 1
        assert pending.get() == [None] * 4
    assert reads > 0
    assert sorted(p.name for p in target.parent.iterdir()) == ["same-key.json"]  # no temp files left


def test_a_fully_cached_cli_run_imports_no_pydantic(tmp_path):
    """Start-up: the cached path reads entries, prints and exits without the engine."""
    tree = tmp_path / "k"
    tree.mkdir()
    for name in ("NKI103/pos_legacy.py", "NKI105/pos_new.py"):
        (tree / name.replace("/", "_")).write_text((RULE_FIXTURES / name).read_text(), encoding="utf-8")
    code = ("import sys; from nki_assist.cli import main; rc = main(['check', sys.argv[1], '--cache-dir', "
            "sys.argv[2]]); print(rc, sorted(m for m in ('pydantic', 'tree_sitter', 'nki_assist.findings', "
            "'nki_assist.rules.registry', 'nki_assist.check.autofix') if m in sys.modules), file=sys.stderr)")
    args = [sys.executable, "-c", code, str(tree), str(tmp_path / "c")]
    cold = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    warm = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert cold.stdout == warm.stdout and "NKI103 [error]" in warm.stdout
    assert "pydantic" in cold.stderr.splitlines()[-1]
    assert warm.stderr.splitlines()[-1] == "1 []", warm.stderr


def test_ctrl_c_during_a_parallel_run_stops_every_worker(tmp_path):
    import signal
    import time

    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.check_bench import generate
    finally:
        sys.path.remove(str(ROOT))
    text = generate(1000)
    for i in range(40):
        (tmp_path / f"k{i}.py").write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "NKI_ASSIST_CACHE_DIR"}
    proc = subprocess.Popen([sys.executable, "-m", "nki_assist", "check", str(tmp_path), "--no-cache"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                            start_new_session=True)
    children: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not children:
        try:
            children = [int(c) for c in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        except OSError:
            break
        time.sleep(0.05)
    if not children:
        proc.kill()
        pytest.skip("no worker processes seen (a 1-core machine, or /proc is not readable)")
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "nki-assist: interrupted" in err
    assert "Traceback" not in err
    time.sleep(0.5)
    assert [c for c in children if Path(f"/proc/{c}").exists()
            and "zombie" not in Path(f"/proc/{c}/status").read_text().lower()] == []


def test_a_many_file_check_batches_the_garbage_collector(monkeypatch):
    """While files are checked, no full collection walks the long-lived heap and automatic collection is
    off; each file's reference cycles are freed right after it; the collector is left as it was found."""
    import gc
    import weakref

    class Cycle:
        def __init__(self):
            self.me = self

    full: list[int] = []
    seen: list[tuple[bool, bool]] = []  # (collector on, previous file's cycle still alive) at each file
    refs: list = []
    real = check_mod.check_bytes

    def spy(path, data, options):
        seen.append((gc.isenabled(), bool(refs) and refs[-1]() is not None))
        c = Cycle()
        refs.append(weakref.ref(c))
        del c  # garbage now, but only the cycle collector can free it
        return real(path, data, options)

    def on_gc(phase, info):
        if phase == "start" and info["generation"] == 2:
            full.append(1)

    monkeypatch.setattr(check_mod, "check_bytes", spy)
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.callbacks.append(on_gc)
    try:
        report = check_paths([str(RULE_FIXTURES)], CheckOptions(), jobs=1)
    finally:
        gc.callbacks.remove(on_gc)
    assert len(seen) == len(report.files) > 20
    assert seen == [(False, False)] * len(seen)
    assert full == []
    assert all(r() is None for r in refs)
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_each_file_is_parsed_by_python_once(monkeypatch, tmp_path):
    """The project model's tree serves pyflakes, NKI211/212 and the API-usage walker: one `ast.parse` per
    file in a directory check, where each of them used to parse the file or each kernel again. (A pool's
    workers keep the trees of what they index for the files they check: `test_a_pool_parses_each_file_once`.)"""
    import ast

    for name in ("NKI211", "NKI212", "NKI002"):
        for src in sorted((RULE_FIXTURES / name).glob("*.py")):
            (tmp_path / f"{name}_{src.name}").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    parsed: list[int] = []
    real = ast.parse

    def counting(source, *args, **kwargs):
        if kwargs.get("mode", "exec") == "exec" and len(str(source)) > 200:  # files and kernels, not snippets
            parsed.append(1)
        return real(source, *args, **kwargs)

    cold = check_paths([str(tmp_path)], CheckOptions(), jobs=1)
    monkeypatch.setattr(ast, "parse", counting)
    again = check_paths([str(tmp_path)], CheckOptions(), jobs=1)
    assert places(again) == places(cold) and len(cold.findings) > 5
    assert len(parsed) == len(list(tmp_path.glob("*.py")))


def test_a_kernel_from_the_file_tree_is_the_kernel_parsed_alone():
    """`kernel_def` (the shared tree) gives what parsing the kernel's lines alone gives: the same nodes with
    the same positions, no decorators, for every kernel of the rule fixtures."""
    import ast

    from nki_assist.parse.nki import parse_nki
    from nki_assist.project import apply_context, context_for
    from nki_assist.rules.nki.common import _parse_function, kernel_def

    compared = 0
    for path in sorted(RULE_FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        nf = apply_context(parse_nki(text, str(path)), context_for(str(path), text, None))
        for k in getattr(nf, "kernels", ()):
            alone = _parse_function(nf.lines, k.line, k.end_line)
            shared = kernel_def(nf, k)
            if alone is None or shared is None:
                continue
            assert ast.dump(shared, include_attributes=True) == ast.dump(alone, include_attributes=True), (path, k.name)
            compared += 1
    assert compared > 100


# --- one set of workers indexes the project and checks it (check_pool.run_affine) ---------------------------

def _parse_log(monkeypatch, log: Path) -> None:
    """Every `ast.parse` of a whole file, in any process (workers inherit the patch), appended to `log`."""
    import ast

    real = ast.parse

    def logged(source, filename="<unknown>", *args, **kwargs):
        if kwargs.get("mode", "exec") == "exec" and len(str(source)) > 200:
            with open(log, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()} {filename}\n")
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", logged)


def _project_tree(tmp_path: Path, copies: int = 3) -> Path:
    """Rule fixtures that read one another through the project (roles, imported constants) and enough of them
    for a pool: `copies` packages of the NKI211/212/002/103 fixtures, each with a constants module."""
    root = tmp_path / "tree"
    for c in range(copies):
        pkg = root / f"pkg{c}"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("", encoding="utf-8")
        (pkg / "consts.py").write_text("TILE = 128\n", encoding="utf-8")
        (pkg / "kern.py").write_text(IMPORTER.replace("from b import TILE", "from .consts import TILE"),
                                     encoding="utf-8")
        for name in ("NKI211", "NKI212", "NKI002", "NKI103"):
            for src in sorted((RULE_FIXTURES / name).glob("*.py")):
                (pkg / f"{name}_{src.name}").write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    return root


def test_a_pool_parses_each_file_once_and_gives_the_in_process_findings(force_pool, monkeypatch, tmp_path):
    """One set of workers indexes the project's modules and checks the files, each first the files it indexed,
    with the syntax trees it kept: Python parses each file once in all the processes together (an index pool
    and then a check pool parsed most files twice), and the findings are the in-process ones, in order."""
    root = _project_tree(tmp_path)
    files = sorted(str(p) for p in root.rglob("*.py"))
    serial = check_paths([str(root)], CheckOptions(), jobs=1)
    log, checked = tmp_path / "parses.log", tmp_path / "checked.log"
    _parse_log(monkeypatch, log)
    real = check_mod._entry_of

    def logged_entry(item):
        with open(checked, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()} {item[0]}\n")
        return real(item)

    monkeypatch.setattr(check_mod, "_entry_of", logged_entry)
    parallel = check_paths([str(root)], CheckOptions(), jobs=2)
    assert force_pool == [len(files)]  # one run of the pool checked every file
    assert places(parallel) == places(serial) and statuses(parallel) == statuses(serial)
    assert "NKI202" in {f.rule for f in serial.findings} and len(serial.findings) > 20
    parses = [tuple(line.split(" ", 1)) for line in log.read_text(encoding="utf-8").splitlines()]
    checker = {path: pid for pid, path in (line.split(" ", 1) for line in checked.read_text().splitlines())}
    big = [f for f in files if len(Path(f).read_text(encoding="utf-8")) > 200]
    indexer = {}
    for pid, path in parses:
        indexer.setdefault(path, pid)
    assert sorted(indexer) == sorted(big)
    # a file is parsed again only by a worker that did not index it (one taken to finish together), never twice by
    # one process: the worker that indexed it checks it with its tree
    assert sorted(parses) == sorted([(indexer[f], f) for f in big] +
                                    [(checker[f], f) for f in big if checker[f] != indexer[f]])
    assert any(checker[f] == indexer[f] for f in big)
    assert len({pid for pid, _ in parses}) == 2 and str(os.getpid()) not in {pid for pid, _ in parses}


def test_a_pool_worker_that_dies_while_indexing_costs_nothing(force_pool, monkeypatch, tmp_path):
    """A module whose worker died while indexing it is indexed here; another worker takes the died one's place:
    the project, and so the findings, are complete."""
    root = _project_tree(tmp_path)
    serial = check_paths([str(root)], CheckOptions(), jobs=1)
    monkeypatch.setattr(check_mod, "_index_kept", _dying_index_kept)
    parallel = check_paths([str(root)], CheckOptions(), jobs=2)
    assert force_pool == [len(serial.files)]
    assert places(parallel) == places(serial) and not parallel.incomplete


_REAL_INDEX_KEPT = check_mod._index_kept


def _dying_index_kept(item):
    if item[0].endswith(os.path.join("pkg1", "consts.py")):  # imported by pkg1/kern.py: its tile's height
        os._exit(3)
    return _REAL_INDEX_KEPT(item)


def test_a_pool_worker_that_dies_while_checking_costs_its_file_only(force_pool, monkeypatch, tmp_path):
    root = _project_tree(tmp_path)
    serial = check_paths([str(root)], CheckOptions(), jobs=1)
    monkeypatch.setattr(check_mod, "_entry_of", _dying_entry)
    (root / "pkg0" / "die.py").write_text("import neuronxcc.nki as nki\n", encoding="utf-8")
    parallel = check_paths([str(root)], CheckOptions(), jobs=2)
    dead = str(root / "pkg0" / "die.py")
    assert [line.split(":")[0] for line in parallel.incomplete] == [dead]
    assert "worker checking it failed" in parallel.incomplete[0]
    assert places(parallel) == places(serial)  # every other file as checked in-process
    assert [s for s in statuses(parallel) if s[0] != dead] == statuses(serial)


def test_a_pool_keeps_a_stale_entry_whose_slice_did_not_change(monkeypatch, tmp_path):
    """Where the pool indexes the edited modules, it also answers the entries checked in another project: an
    entry whose file's slice of the project is unchanged stands, the others are checked again; cache counts and
    findings are those of an in-process run."""
    monkeypatch.setattr(pool_mod, "MIN_PARALLEL_BYTES", 0)
    root = _project_tree(tmp_path, copies=2)
    opts = CheckOptions()

    def run(jobs: int, folder: str):
        cache = CheckCache(tmp_path / folder, opts)
        report = check_paths([str(root)], opts, cache=cache, jobs=jobs)
        return (cache.hits, cache.misses), places(report), statuses(report)

    runs: list[str] = []
    real = pool_mod.run_affine
    monkeypatch.setattr(pool_mod, "run_affine", lambda *a, **k: runs.append("affine") or real(*a, **k))
    for folder in (".serial", ".pooled"):
        run(1, folder)
    # pkg0's constant changes (kern.py reads it) and pkg1's kernel gains a comment: two modules to index
    (root / "pkg0" / "consts.py").write_text("TILE = 256\n", encoding="utf-8")
    kern = root / "pkg1" / "kern.py"
    kern.write_text(kern.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    serial, pooled = run(1, ".serial"), run(2, ".pooled")
    assert runs == ["affine"] and pooled == serial
    hits, misses = serial[0]
    assert hits > 10 and misses == 3  # the two edited files and pkg0/kern.py, whose slice changed
    assert run(2, ".pooled")[0] == (hits + misses, 0)


def _keep_pid(item):
    time.sleep(0.002)
    _FIRST_HERE[item[0]] = os.getpid()
    return item[0], os.getpid()


_FIRST_HERE: dict = {}  # in a worker: path -> the worker whose phase one did it


def _check_setup(results, mine):
    """Own results are None (the worker kept them); the others' came from the other worker."""
    assert all((r is None) == (i in mine) for i, r in enumerate(results))
    assert all(r[1] != os.getpid() for r in results if r is not None)
    _FIRST_HERE.update(r for r in results if r is not None)


def _second(item):
    time.sleep(0.002)
    return item[0], os.getpid(), _FIRST_HERE.get(item[0]), time.monotonic()


def test_run_affine_gives_each_item_back_in_order_checked_first_where_its_first_phase_ran():
    """Every item once, results in input order; a worker starts phase two with the items it did in phase one
    (what it kept of them is there) and those nobody did, biggest first, and only then takes the other's,
    smallest first."""
    first = [(f"m{i}", b"x" * (10 + (i * 13) % 90)) for i in range(40)]
    second = [(path, data) for path, data in reversed(first)] + [("other", b"y" * 50)]
    out = pool_mod.run_affine(_keep_pid, first, _check_setup, _second, second, 2,
                              lambda path, exc: pytest.fail(str(exc)), lambda path, exc: pytest.fail(str(exc)))
    assert [path for path, *_ in out] == [path for path, _ in second]
    size = dict(second)
    workers = {pid for _, pid, _, _ in out}
    assert len(workers) == 2
    for pid in workers:
        done = [(path, first_pid) for path, p, first_pid, _ in sorted(out, key=lambda r: r[3]) if p == pid]
        own = [path for path, first_pid in done if first_pid in (pid, None)]
        taken = [path for path, first_pid in done if first_pid not in (pid, None)]
        assert own and [path for path, _ in done] == own + taken
        assert [len(size[p]) for p in own] == sorted((len(size[p]) for p in own), reverse=True)
        assert [len(size[p]) for p in taken] == sorted(len(size[p]) for p in taken)


def test_run_affine_failures_in_a_job_are_the_items_and_a_failed_setup_stops_the_run():
    out = pool_mod.run_affine(_keep_pid, [("a", b"1"), ("b", b"2")], _check_setup, _raise_for_b,
                              [("a", b"1"), ("b", b"2")], 2, lambda path, exc: pytest.fail(str(exc)),
                              lambda path, exc: f"failed {path}: {exc}")
    assert out == ["a", "failed b: ValueError: b is bad"]
    with pytest.raises(RuntimeError, match="could not start checking: ValueError: no setup"):
        pool_mod.run_affine(_keep_pid, [("a", b"1")], _bad_setup, _raise_for_b, [("a", b"1")], 2,
                            lambda path, exc: None, lambda path, exc: None)


def _raise_for_b(item):
    if item[0] == "b":
        raise ValueError("b is bad")
    return item[0]


def _bad_setup(results, mine):
    raise ValueError("no setup")


def test_a_pool_that_cannot_write_the_cache_says_so(force_pool, tmp_path):
    """The workers write the entries of the files they check: a cache they cannot write costs only speed, and the
    report says why, as when this process writes them."""
    root = _project_tree(tmp_path, copies=2)
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    opts = CheckOptions()
    report = check_paths([str(root)], opts, cache=CheckCache(blocker / "c", opts), jobs=2)
    assert force_pool == [len(report.files)]
    assert places(report) == places(check_paths([str(root)], opts, jobs=1)) and report.findings
    assert [n for n in report.notes if n.startswith("cache not written to")] == [
        f"cache not written to {blocker / 'c'}: Not a directory"]


def _second_dies_on_x(item):
    if item[0].startswith("x"):
        os._exit(5)
    return item[0]


def test_run_affine_workers_that_die_are_replaced_and_cost_their_item_only():
    """Both workers die (on x1 and x2): each death fails its item only, new workers finish the rest."""
    first = [(f"m{i}", b"m" * (i + 1)) for i in range(12)]
    second = [(f"x{i}" if i in (1, 2) else f"m{i}", b"m" * (20 - i)) for i in range(12)]
    out = pool_mod.run_affine(_keep_pid, first, _check_setup, _second_dies_on_x, second, 2,
                              lambda path, exc: pytest.fail(str(exc)),
                              lambda path, exc: f"failed {path}: {type(exc).__name__}")
    assert out == [f"failed {path}: RuntimeError" if path.startswith("x") else path for path, _ in second]


def _dies_on_first(item):
    if item[0] == "f0":
        os._exit(3)
    time.sleep(0.001)
    return item[0]


def test_run_parallel_answers_every_item_when_the_pool_breaks_while_queueing():
    """A worker that dies can break the pool before every item is queued (submit raises then): the items never
    queued fail like the others the broken pool dropped, none is left without an answer."""
    items = [(f"f{i}", b"x" * (500 - i)) for i in range(400)]
    out = pool_mod.run_parallel(_dies_on_first, items, None, 2, lambda path, exc: f"failed {path}")
    assert out[0] == "failed f0" and None not in out
    assert all(o in (path, f"failed {path}") for o, (path, _) in zip(out, items))
