"""The versioned NKI API table: generated from the SDK stubs (the shipped file matches the generator's
output), the facts the rules rely on, and the installed `nki` package's signatures winning."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from nki_assist.api import catalogue as nki_api
from nki_assist.api import table

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpora" / "aws-neuron-sdk-nki-api"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared/corpora/aws-neuron-sdk-nki-api not present beside the repo")
def test_shipped_table_is_the_generators_output():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_nki_api_table.py"), str(CORPUS), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_sdk_releases_map_to_nki_versions_from_the_release_notes():
    assert table.sdk_to_nki() == {"2.27": "0.2", "2.28": "0.2", "2.29": "0.3", "2.30": "0.4", "2.31": "0.5",
                                  "2.32": "0.6"}
    assert table.versions() == ["0.2", "0.3", "0.4", "0.5", "0.6"]
    assert table.source_info()["sdk"]["2.29.0"]["nki"] == "0.3"


def test_status_follows_release_notes_and_stubs():
    assert [table.status("nl.tile_size.psum_fmax", v) for v in ("0.3", "0.4", "0.6")] == \
        ["present", "deprecated", "deprecated"]  # deprecated from 0.4 (stub marker), never removed
    assert [table.status("nisa.tensor_copy_dynamic_src", v) for v in ("0.2", "0.3", "0.4")] == \
        ["present", "deprecated", "removed"]
    assert table.status("nl.dynamic_range", "0.5") == "present" and table.status("nl.dynamic_range", "0.6") == "deprecated"
    assert table.status("nl.negate", "0.3") == "unknown" and table.lookup("nl.negate") is None
    assert table.status("nl.fori_loop", "0.5") == "unknown" and table.status("nl.fori_loop", "0.6") == "present"
    assert table.status("nl.arange", "0.3") == "removed"  # curated: MIG 0.1 -> 0.2
    # a stub gap is not a removal: shared_constant is missing from the 2.29 stub only
    assert table.status("nl.shared_constant", "0.3") == "present"


def test_signatures_and_return_convention():
    e = table.lookup("nisa.nc_matmul", "0.3")
    assert e.returns == "dst" and e.engine == "tensor" and e.param("accumulate").default == "None"
    assert table.lookup("nisa.nc_matmul", "0.2").param("accumulate") is None  # added in 0.3
    assert table.lookup("nl.exp", "0.3").returns == "value"
    assert table.lookup("nl.shared_identity_matrix", "0.6").returns == "value"  # dst= is optional there
    assert table.kwarg_status("nisa.dma_copy", "dst_rmw_op", "0.2") == "present"
    assert table.kwarg_status("nisa.dma_copy", "dst_rmw_op", "0.3") == "removed"
    assert table.kwarg_status("nki.jit", "mode", "0.3") == "deprecated"
    assert table.kwarg_status("nisa.tensor_copy", "engine", "0.3") == "present"
    assert table.kwarg_status("nisa.tensor_copy", "dtype", "0.3") == "removed"  # nisa.*(dtype=) after 0.1


def test_ops_is_the_simulators_list():
    ops6 = table.ops("0.6", "nisa")
    assert "nisa.topk" in ops6 and "nisa.topk" not in table.ops("0.5", "nisa")
    assert "nisa.tensor_copy_dynamic_src" in table.ops("0.3") and "nisa.tensor_copy_dynamic_src" not in table.ops("0.4")
    assert "nl.add" not in table.ops("0.2") and "nl.add" in table.ops("0.3")  # 0.2: an ALU op name, not a call


def test_catalogue_new_dialect_isa_entries_are_in_the_table():
    """api/catalogue.py's hand catalogue and the generated table agree on which ISA names new NKI has."""
    new_isa = {a.name for a in nki_api.CATALOGUE if a.new and a.name.startswith("nisa.")}
    missing = sorted(n for n in new_isa if table.lookup(n) is None)
    # three hand entries no stub 2.27-2.32 documents (sparse_matmul's doc section is commented out,
    # nki-facts.md 1.3); the list may only shrink
    assert missing == ["nisa.scalar_load", "nisa.select", "nisa.sparse_matmul"], missing


def test_installed_nki_signatures_win(tmp_path, monkeypatch):
    pkg = tmp_path / "nki"
    (pkg / "isa").mkdir(parents=True)
    (pkg / "language").mkdir()
    (pkg / "__init__.py").write_text("__version__ = '0.3.1'\ndef jit(fn=None, **kw):\n    return fn\n")
    (pkg / "isa" / "__init__.py").write_text("def tensor_copy(dst, src, engine=None, name=None, dtype=None):\n    pass\n")
    (pkg / "language" / "__init__.py").write_text("")
    for mod in [m for m in sys.modules if m == "nki" or m.startswith("nki.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    table.clear_caches()
    try:
        assert table.installed_version() == "0.3"
        e = table.lookup("nisa.tensor_copy", "0.3")
        assert e.source == "installed" and e.param("dtype") is not None
        assert table.kwarg_status("nisa.tensor_copy", "dtype", "0.3") == "present"
    finally:
        for mod in [m for m in sys.modules if m == "nki" or m.startswith("nki.")]:
            sys.modules.pop(mod, None)
        table.clear_caches()


def test_hover_shows_the_facts_at_the_files_version(tmp_path):
    from lsp_server.hover import api_hover
    from nki_assist.parse.nki import parse_nki

    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text("nki==0.3.0\n")
    src = "import nki\nimport nki.language as nl\n\n\n@nki.jit\ndef k(a):\n    w = nl.tile_size.psum_fmax\n"
    nf = parse_nki(src, str(tmp_path / "k.py"))
    text = api_hover(nf, "    w = nl.tile_size.psum_fmax", 20, None)
    assert text.startswith("**`nl.tile_size.psum_fmax`**") and "NKI 0.3: present" in text
    text6 = api_hover(nf, "    w = nl.tile_size.psum_fmax", 20, type("T", (), {"nki_version": "0.6"})())
    assert "NKI 0.6: deprecated" in text6 and "psum_bank_fmax" in text6
    call = api_hover(nf, "    nisa.nc_matmul(dst=p, stationary=a, moving=b)", 8, None)
    assert call is None  # `nisa` is not imported in this file


def test_catalogue_asks_the_table():
    assert nki_api.documented("nisa.topk", "0.6") and not nki_api.documented("nisa.topk", "0.5")
    assert nki_api.documented("nl.tile_size.psum_fmax", "0.6")  # deprecated still exists
