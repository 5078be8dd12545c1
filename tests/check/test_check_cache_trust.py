"""Cache entries are checked before they are believed (issue 44, case 6): a hand-edited or copied entry, or one
whose fields have the wrong types, is a miss, never an internal error and never a way to hide findings."""

from __future__ import annotations

import json
from pathlib import Path

import nki_assist.check.cache as cache_mod
from nki_assist.check import CheckOptions, check_paths
from nki_assist.check.cache import CheckCache

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "fixtures" / "rules" / "NKI103" / "pos_legacy.py"


def _run(tmp_path, *names):
    opts = CheckOptions()
    cache = CheckCache(tmp_path / ".c", opts)
    report = check_paths([str(tmp_path / n) for n in names], opts, cache=cache, jobs=1)
    return sorted((Path(f.file).name, f.rule, f.line) for f in report.findings), cache


def _entries(cache: CheckCache) -> list[Path]:
    return [p for p in cache.folder.glob("*.json") if b'"findings"' in p.read_bytes()]


def _body(path: Path) -> dict:
    data = path.read_bytes()
    return json.loads(data[data.index(b"{"):])


def test_an_entry_edited_to_hold_no_findings_hides_nothing(tmp_path):
    (tmp_path / "a.py").write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
    cold, cache = _run(tmp_path, "a.py")
    assert cold
    (entry,) = _entries(cache)
    data = entry.read_bytes()
    body = _body(entry)
    body["findings"] = []
    entry.write_bytes(data[:data.index(b"{")] + json.dumps(body).encode())  # the digest line kept as it was
    warm, cache = _run(tmp_path, "a.py")
    assert warm == cold and cache.misses == 1  # before: no findings, exit 0


def test_an_entry_copied_from_a_clean_file_hides_nothing(tmp_path):
    (tmp_path / "a.py").write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "b.py").write_text("import nki\n", encoding="utf-8")
    cold_a, _ = _run(tmp_path, "a.py")
    _, cache = _run(tmp_path, "b.py")
    (clean,) = [p for p in _entries(cache) if _body(p)["path"].endswith("b.py")]
    (dirty,) = [p for p in _entries(cache) if _body(p)["path"].endswith("a.py")]
    body = _body(clean)
    body["path"] = _body(dirty)["path"]
    data = clean.read_bytes()
    dirty.write_bytes(data[:data.index(b"{")] + json.dumps(body).encode())
    warm, _ = _run(tmp_path, "a.py")
    assert warm == cold_a


def test_an_entry_with_wrong_field_types_is_a_miss(tmp_path):
    (tmp_path / "a.py").write_text(BAD.read_text(encoding="utf-8"), encoding="utf-8")
    cold, cache = _run(tmp_path, "a.py")
    (entry,) = _entries(cache)
    key = entry.stem
    for damage in ({"findings": "none"}, {"notes": 3}, {"findings": [{"rule": 1}]},
                   {"findings": [dict(_body(entry)["findings"][0], line="x")]}, {"status": None}):
        body = dict(_body(entry), **damage)
        raw = json.dumps(body).encode()
        entry.write_bytes(cache_mod.seal(key, raw) + b"\n" + raw)  # sealed: only its types are wrong
        warm, cache = _run(tmp_path, "a.py")  # before: internal error (TypeError) for several of these
        assert warm == cold and cache.misses == 1, damage
        (entry,) = _entries(cache)
