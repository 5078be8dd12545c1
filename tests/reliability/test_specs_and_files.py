"""Malformed specs and files (issue 17, cases 5 and 6): a spec error names the file, the key and the
problem (never "internal error"), and `check` never blocks on a FIFO or a device."""

from __future__ import annotations

import os

import numpy as np
import pytest
from reliability_helpers import make_port, run_cli

from nki_assist.numerics.spec import SpecError, load_spec

X = 'x = { shape = [128, "L"], dtype = "bfloat16" }'


def _edit(port, old: str, new: str):
    port.write_text(port.read_text().replace(old, new, 1))
    return port


@pytest.mark.parametrize("replacement, key, problem", [
    ('x = { shape = [128, "L"] }', "inputs.x", "missing `dtype`"),
    ('x = { shape = [], dtype = "bfloat16" }', "inputs.x.shape", "shape is empty"),
    ('x = { shape = [true, "L"], dtype = "bfloat16" }', "inputs.x.shape", "shape[0] is true"),
    ('x = { shape = [128, 0], dtype = "bfloat16" }', "inputs.x.shape", "shape[1] is 0"),
    ('x = { shape = [128, "L"], dtype = "bfloat16", scale = nan }', "inputs.x.scale", "finite number"),
    ('x = { shape = [128, "L"], dtype = "bfloat16", dist = "uniform", low = -inf, high = 1.0 }',
     "inputs.x.low", "finite number"),
])
def test_input_declarations_are_validated(tmp_path, replacement, key, problem):
    port = _edit(make_port(tmp_path), X, replacement)
    with pytest.raises(SpecError) as err:
        load_spec(port)
    assert f"{port}: {key}: " in str(err.value) and problem in str(err.value)


def test_a_latin1_kernel_names_the_key_and_the_line(tmp_path):
    port = make_port(tmp_path)
    kernel = tmp_path / "row_sum_nki.py"
    kernel.write_bytes(b"# caf\xe9 kernel\n" + kernel.read_bytes())
    with pytest.raises(SpecError, match=r"port\.nki: .*row_sum_nki\.py is not UTF-8 text \(byte 0xe9 on line 1\)"):
        load_spec(port)


def test_a_pickled_golden_npz_is_refused_before_anything_runs(tmp_path):
    port = make_port(tmp_path)
    np.savez(tmp_path / "golden.npz", np.array([{"payload": 1}], dtype=object))
    _edit(port, "[tolerance]", '[golden]\noutputs = "golden.npz"\n\n[tolerance]')
    with pytest.raises(SpecError, match=r"golden\.outputs: .*golden\.npz: array 'arr_0' holds Python objects"):
        load_spec(port)
    done = run_cli(["simulate", str(port)])
    assert done.returncode == 2 and "golden.outputs" in done.stderr and "internal error" not in done.stderr


def test_a_golden_npz_declaring_a_huge_array_is_refused_before_reading(tmp_path):
    import zipfile

    from nki_assist.numerics.npz import load_npz

    path = tmp_path / "huge.npz"
    header = np.lib.format.header_data_from_array_1_0(np.zeros(4, np.float32))
    header["shape"] = (2**40,)  # a 4 TiB float32 array in a 200-byte file
    with zipfile.ZipFile(path, "w") as zf, zf.open("arr_0.npy", "w") as fh:
        np.lib.format.write_array_header_1_0(fh, header)
    with pytest.raises(SpecError, match=r"declares 4.0 TiB of arrays, more than the 2.0 GiB memory budget"):
        load_npz(path, "port.toml: golden.outputs", limit_bytes=2 * 2**30)


def test_huge_dimensions_load_and_are_skipped_not_overflowing(tmp_path):
    port = make_port(tmp_path, L=2**63 - 1)
    done = run_cli(["simulate", str(port), "--format", "json"])
    assert done.returncode == 1 and '"rule": "TC109"' in done.stdout  # before: internal error: OverflowError


def test_check_skips_a_fifo_instead_of_blocking(tmp_path):
    fifo = tmp_path / "pipe_nki.py"
    os.mkfifo(fifo)
    device = tmp_path / "zero_nki.py"
    device.symlink_to("/dev/zero")
    done = run_cli(["check", str(fifo), str(device)], timeout=60)  # before: blocked forever
    assert done.returncode == 1  # nothing unchecked passes: the run is incomplete (issue 31)
    assert "nki-assist check: incomplete: 2 files not fully checked" in done.stderr
    assert f"{fifo}: a FIFO, not a regular file; not checked" in done.stderr
    assert f"{device}: a device, not a regular file; not checked" in done.stderr


def test_review_refuses_a_fifo_as_usage_error(tmp_path):
    fifo = tmp_path / "pipe_nki.py"
    os.mkfifo(fifo)
    done = run_cli(["review", "--nki", str(fifo)], timeout=60)
    assert done.returncode == 2 and "not a regular file" in done.stderr
