"""What a batch reviews: PATH... discovery, manifests, template mode's generated specs, resume keys."""

from __future__ import annotations

import json

import pytest
from batch_helpers import ASST4, small_batch

from nki_assist.batch.keys import task_key
from nki_assist.batch.manifest import ManifestError, discover
from nki_assist.batch.template import expand
from nki_assist.numerics.spec import load_spec


def test_folder_manifest_and_specs(tmp_path):
    manifest = small_batch(tmp_path / "b", 3)
    entries = [json.loads(line) for line in manifest.read_text().splitlines()]
    by_manifest = discover([str(manifest)])
    assert [t.id for t in by_manifest] == [e["id"] for e in entries]
    by_folder = discover([str(tmp_path / "b" / "subs")])
    assert sorted(t.id for t in by_folder) == sorted(e["id"] for e in entries)
    toml = tmp_path / "b" / "m.toml"
    toml.write_text('ports = ["%s", {id = "x y", spec = "%s"}]\n' % (entries[0]["spec"], entries[1]["spec"]))
    assert [t.id for t in discover([str(toml)])] == [entries[0]["id"], "x_y"]
    # the same spec twice gets two ids
    spec = str(tmp_path / "b" / entries[0]["spec"])
    one = discover([spec])[0].id
    assert one == entries[0]["id"]  # a spec's id is its folder's name
    assert [t.id for t in discover([spec, spec])] == [one, one + "-2"]


@pytest.mark.parametrize("text, problem", [
    ('{"spec": "nope/port.toml"}\n', "no such file"),
    ("not json\n", "invalid JSON"),
    ('{"id": "a"}\n', "expected"),
])
def test_bad_manifest_names_line_and_problem(tmp_path, text, problem):
    m = tmp_path / "m.jsonl"
    m.write_text(text)
    with pytest.raises(ManifestError, match=problem) as exc:
        discover([str(m)])
    assert f"{m}:1" in str(exc.value)


def test_template_writes_specs_that_load_and_point_at_each_submission(tmp_path):
    tasks = expand(str(ASST4 / "spec.toml"), str(ASST4 / "subs" / "*" / "kernel.py"), str(tmp_path / "out"))
    assert [t.id for t in tasks] == ["correct", "low_precision_psum", "partition_overflow", "too_slow",
                                     "wrong_pool_slice"]
    for t in tasks:
        spec = load_spec(t.spec)
        assert spec.nki_path.resolve() == (ASST4 / "subs" / t.id / "kernel.py").resolve()
        assert spec.reference_path.resolve() == (ASST4 / "reference.py").resolve()
        assert [s.name for s in spec.sizes] == ["c128", "c256"]
        assert spec.inputs["pool_size"].value == 2


def test_key_follows_every_file_the_review_reads(tmp_path):
    manifest = small_batch(tmp_path / "b", 1)
    (task,) = discover([str(manifest)])
    spec = load_spec(task.spec)
    before = task_key(task, {})
    assert task_key(task, {}) == before
    assert task_key(task, {"review": {"target": "trn1"}}) != before  # options are part of the key
    for path in (spec.nki_path, spec.reference_path, spec.path):
        old = path.read_bytes()
        path.write_bytes(old + b"\n# changed\n")
        assert task_key(task, {}) != before, path
        path.write_bytes(old)
    assert task_key(task, {}) == before
