"""Issue 31 item 1: what the kernel's process writes back can never run code in nki-assist.

The worker that writes the result runs the user's code in its own process, so the kernel can write
anything where the result goes. Two attacks from the issue: a kernel that drops a crafted pickle there
and exits, and a stealthy one that patches the result writer, lets the honest result through and adds
the pickle. Before: the parent unpickled the file and ran the payload (marker written by nki-assist's
own pid); the stealthy one ended with a normal `ok`. Both in the default and the strong sandbox.
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from reliability_helpers import make_port

from nki_assist.toolchain import isolation, wire
from nki_assist.toolchain.builtin import BuiltinBackend

pytestmark = pytest.mark.usefixtures("sandbox_start")  # fresh process and warm zygote alike

MODES = ["basic", pytest.param("strong", marks=pytest.mark.skipif(
    isolation.strong_tool()[0] is None, reason=f"strong sandbox unavailable: {isolation.strong_tool()[1]}"))]

# The payload any unpickler would run: record which process ran it.
_EXPLOIT = """import os, pickle, sys
class _Exploit:
    def __init__(self, honest=None):
        self.honest = honest
    def __reduce__(self):
        code = "open({marker!r}, 'w').write(str(__import__('os').getpid()))"
        if self.honest is None:
            return (exec, (code,))
        return (eval, ("(exec(" + repr(code) + "), __import__('pickle').loads(" + repr(self.honest) + "))[1]",))
_job = sys.argv[1]  # the worker is `python -m nki_assist.toolchain.child JOBDIR`
"""

CRAFTED = _EXPLOIT + """for _name in ("result.pkl", "result.json", "result.npz", "result.tmp"):
    open(os.path.join(_job, _name), "wb").write(pickle.dumps({{"status": "ok", "value": _Exploit()}}))
os._exit(0)"""

STEALTH = _EXPLOIT + """_main = sys.modules["__main__"]
_honest_write = _main._write
def _write(jobdir, payload):
    _honest_write(jobdir, payload)
    open(os.path.join(str(jobdir), "result.pkl"), "wb").write(pickle.dumps(_Exploit(pickle.dumps(payload))))
_main._write = _write"""


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((128, 512)).astype(ml_dtypes.bfloat16)


def _run(tmp_path: Path, inject: str, mode: str, monkeypatch):
    monkeypatch.setattr(isolation, "_chosen", mode)
    marker = tmp_path / "pwned"
    port = make_port(tmp_path / "port", inject.format(marker=str(marker)))
    x = _x()
    result = BuiltinBackend().run(str(port.parent / "row_sum_nki.py"), "row_sum", [x], timeout_s=30)
    return result, marker, x


@pytest.mark.parametrize("mode", MODES)
def test_a_crafted_pickle_where_the_result_goes_runs_nothing(tmp_path, mode, monkeypatch):
    result, marker, _ = _run(tmp_path, CRAFTED, mode, monkeypatch)
    assert not marker.exists(), f"payload ran in pid {marker.read_text()} (nki-assist is {os.getpid()})"
    # the forged file is the kernel's doing: an error finding on the kernel, not a backend crash
    assert result.status == "kernel-error", (result.status, result.error)
    assert [f.rule for f in result.findings] == ["TC110"]


@pytest.mark.parametrize("mode", MODES)
def test_a_patched_result_writer_runs_nothing_and_the_honest_result_stands(tmp_path, mode, monkeypatch):
    result, marker, x = _run(tmp_path, STEALTH, mode, monkeypatch)
    assert not marker.exists(), f"payload ran in pid {marker.read_text()} (nki-assist is {os.getpid()})"
    assert result.status == "ok", result.error
    (out,) = result.outputs
    np.testing.assert_allclose(out.astype(np.float32).ravel(), x.astype(np.float32).sum(axis=1).ravel(),
                               rtol=2e-2, atol=2e-2)


# --- the parent's reader, fed forged documents directly --------------------------------------------


def _doc(job: Path, value, arrays: dict[str, np.ndarray] | None = None, **npz_kw) -> None:
    (job / "result.json").write_text(json.dumps({"format": wire.FORMAT, "status": "ok", "value": value}))
    np.savez(job / "result.npz", **(arrays or {}))


def test_the_reader_builds_only_allow_listed_types(tmp_path):
    for name in ("builtins:eval", "os:system", "nki_assist.toolchain.sandbox:ChildOutcome", "subprocess:Popen"):
        _doc(tmp_path, {"$": "obj", "type": name, "fields": {"args": ["true"]}})
        with pytest.raises(wire.WireError, match="not allowed"):
            wire.read(tmp_path, 2**26)


def test_the_allow_list_names_the_classes_it_builds():
    assert set(wire._allowed()) == wire.ALLOWED_NAMES


def test_an_object_array_in_the_npz_is_refused_without_unpickling(tmp_path):
    class Boom:
        def __reduce__(self):
            return (exec, (f"open({str(tmp_path / 'pwned')!r}, 'w').write('x')",))

    arr = np.empty(1, dtype=object)
    arr[0] = Boom()
    np.savez(tmp_path / "result.npz", a0=arr)  # allow_pickle is on when saving
    (tmp_path / "result.json").write_text(json.dumps({"format": wire.FORMAT, "status": "ok",
                                                      "value": {"$": "array", "i": 0, "dtype": "|O"}}))
    with pytest.raises(wire.WireError):
        wire.read(tmp_path, 2**26)
    (tmp_path / "result.json").write_text(json.dumps({"format": wire.FORMAT, "status": "ok",
                                                      "value": {"$": "array", "i": 0, "dtype": "<f8"}}))
    with pytest.raises(wire.WireError, match="dtype object"):
        wire.read(tmp_path, 2**26)
    assert not (tmp_path / "pwned").exists()


def test_a_header_that_lies_about_its_size_allocates_nothing(tmp_path):
    buf = tmp_path / "a0.npy"
    np.save(buf, np.zeros(4))
    raw = buf.read_bytes().replace(b"(4,)", b"(10000000000,)")  # the header keeps its padded length
    with zipfile.ZipFile(tmp_path / "result.npz", "w") as zf:
        zf.writestr("a0.npy", raw)
    (tmp_path / "result.json").write_text(json.dumps({"format": wire.FORMAT, "status": "ok",
                                                      "value": {"$": "array", "i": 0, "dtype": "<f8"}}))
    with pytest.raises(wire.WireError, match="^result array 0 declares 80,000,000,000 bytes"):
        wire.read(tmp_path, 2**26)


@pytest.mark.parametrize("doc, why", [
    ('{"format": "nki-assist-result/1", "status": "ok", "value": ' + "[" * 100_000 + "]" * 100_000 + "}", "RecursionError"),
    ('{"format": "nki-assist-result/1", "status": "ok", "value": ' + "[" * 300 + "]" * 300 + "}", "deeper than"),
    ('{"format": "nki-assist-result/1", "status": "pwned", "value": null}', "status"),
    ('{"format": "nki-assist-result/1", "status": "ok", "line": "7", "value": null}', "line"),
    ('{"format": "nki-assist-result/1", "status": "ok", "value": {"$": "array", "i": 0, "dtype": "O"}}',
     "dtype"),
    ('\x80\x04\x95pickle', "unreadable"),
])
def test_malformed_documents_are_named_errors(tmp_path, doc, why):
    (tmp_path / "result.json").write_text(doc)
    np.savez(tmp_path / "result.npz")
    with pytest.raises(wire.WireError) as exc:
        wire.read(tmp_path, 2**26)
    assert why in str(exc.value), str(exc.value)


def test_compressed_members_are_refused(tmp_path):
    np.savez_compressed(tmp_path / "result.npz", a0=np.zeros(1000))
    (tmp_path / "result.json").write_text(json.dumps({"format": wire.FORMAT, "status": "ok",
                                                      "value": {"$": "array", "i": 0, "dtype": "<f8"}}))
    with pytest.raises(wire.WireError, match="compressed"):
        wire.read(tmp_path, 2**26)


def test_values_round_trip(tmp_path):
    from nki_assist.contracts.runs import Operand, RunResult, TraceEntry
    from nki_assist.rules import registry

    op = Operand((128, 4), "bfloat16", "sbuf", 128, "x")
    f = registry.get("TC101").finding("m", file="/k.py", line=3, evidence={"v": np.float32(1.5), "t": (1, 2)})
    run = RunResult("builtin", "ok", outputs=[np.ones((3, 4), ml_dtypes.bfloat16),
                                              np.arange(5).astype(ml_dtypes.float8_e5m2)], findings=[f],
                    trace=[TraceEntry(1, "vector", "tensor_copy", 4, "/k.py", op, [op], 128, 4, hbm_box=((0, 1),))])
    value = {"run": run, 3: (np.float64(2.0), 1 + 2j, b"\x00", {"$": 1}, None), "obj": object()}
    wire.write(tmp_path, {"status": "ok", "value": value})
    back = wire.read(tmp_path, 2**26)["value"]
    assert back["run"].trace == run.trace and back["run"].findings == run.findings
    assert [o.dtype for o in back["run"].outputs] == [o.dtype for o in run.outputs]
    assert back[3] == (2.0, 1 + 2j, b"\x00", {"$": 1}, None) and type(back[3][0]) is np.float64
    assert back["obj"] == wire.Opaque("object")


def test_trace_rows_are_validated(tmp_path):
    row = [1, "vector", "tensor_copy", 4, "/k.py", None, [], 128, 4, 0, 0, None, None, None, 0, {}]
    _doc(tmp_path, {"$": "trace", "rows": [row]})
    (entry,) = wire.read(tmp_path, 2**26)["value"]
    assert (entry.seq, entry.engine, entry.srcs) == (1, "vector", [])
    for bad in (dict(enumerate(row)) | {1: "os.system"}, dict(enumerate(row)) | {5: ["x"]}):
        _doc(tmp_path, {"$": "trace", "rows": [[bad[i] for i in range(len(row))]]})
        with pytest.raises(wire.WireError, match="invalid trace"):
            wire.read(tmp_path, 2**26)


def test_a_reference_that_forges_its_result_runs_nothing(tmp_path):
    """The reference runs in the same kind of child (numerics/refchild.py): same channel, same rule."""
    from reliability_helpers import run_json

    marker = tmp_path / "pwned"
    ref = "\n\ndef evil_ref(x):\n" + "".join(f"    {ln}\n" for ln in CRAFTED.format(marker=str(marker)).splitlines())
    port = make_port(tmp_path / "port", "", ref="evil_ref", ref_extra=ref)
    code, doc, err = run_json(["simulate", str(port), "--timeout", "20"])
    assert not marker.exists(), f"payload ran in pid {marker.read_text()}"
    assert doc is not None, err[-500:]
    assert code == 1 and doc["complete"] is False  # no reference, no comparison: never a pass
    assert "TC105" in [f["rule"] for f in doc["findings"]]  # the reference failed


def test_callers_check_the_shape_of_a_childs_value():
    """A forged value of an allowed kind but the wrong shape is refused, not used (no internal error)."""
    from nki_assist.contracts.runs import RunResult
    from nki_assist.numerics.scenarios import _batch_ok
    from nki_assist.toolchain.neuron import _valid_value

    good = {"L512": {"trainium": RunResult("builtin", "ok"), "reference": [np.zeros(3)]}}
    assert _batch_ok(good, ["trainium"])
    assert not _batch_ok({"L512": {"trainium": "RunResult"}}, ["trainium"])
    assert not _batch_ok({"L512": {"reference": [[1.0]]}}, ["trainium"])
    assert not _batch_ok(["L512"], ["trainium"])
    assert _valid_value({"outputs": [np.zeros(2)], "warnings": ["w"], "warning_lines": []})
    assert not _valid_value({"outputs": "x", "warnings": []})
    assert not _valid_value({"outputs": [np.zeros(2)], "warnings": [wire.Opaque("Warning")]})
