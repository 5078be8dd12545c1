"""The server's workspace model in process: the project it keeps through edits, closes and disk changes is
the project `check` builds from the same texts (every file's context digest equal), and the documents whose
context changed are the ones it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("nki_assist.project")
from lsp_server.project_model import WorkspaceModel  # noqa: E402
from lsp_server.project_sync import _stale  # noqa: E402
from nki_assist.project import Project, context_digest  # noqa: E402 - after the skip

HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
FILES = {
    "__init__.py": "",
    "widths.py": "LANES = 128\n",
    "pieces.py": HEAD + "from .widths import LANES\n\n\ndef fill(dst, n):\n"
                 "    for i in nl.affine_range(n // LANES):\n        nisa.memset(dst=dst[i], value=0.0)\n",
    "front.py": HEAD + "from .pieces import fill\n\n\n@nki.jit\ndef front(a):\n    n, m = a.shape\n"
                "    assert n % 128 == 0\n    t = nl.ndarray((n, m), dtype=a.dtype, buffer=nl.sbuf)\n"
                "    fill(t, n)\n    return t\n",
}


def _tree(tmp_path: Path) -> Path:
    pkg = tmp_path / "lanes"
    pkg.mkdir()
    for name, text in FILES.items():
        (pkg / name).write_text(text, encoding="utf-8")
    return pkg


def _fresh(texts: dict[str, str]) -> dict[str, str]:
    project = Project.build(texts)
    return {p: context_digest(project.context(p)) for p in texts}


def _kept(model: WorkspaceModel, paths) -> dict[str, str]:
    return {p: model.digest(p) for p in paths}


def test_the_kept_project_is_the_one_check_builds_through_edits(tmp_path):
    pkg = _tree(tmp_path)
    model = WorkspaceModel()
    model.build([str(tmp_path)])
    texts = {str(pkg / n): t for n, t in FILES.items()}
    assert sorted(model.order) == sorted(texts)
    assert _kept(model, texts) == _fresh(texts)
    pieces, front = str(pkg / "pieces.py"), str(pkg / "front.py")
    edits = [
        (front, FILES["front.py"].replace("    assert n % 128 == 0\n", "")),  # body only: calls of others kept
        (front, FILES["front.py"]),
        (pieces, FILES["pieces.py"].replace("def fill(", "def fill_rows(")),  # a name others resolve against
        (pieces, FILES["pieces.py"]),
        (pieces, FILES["pieces.py"] + "\n\ndef spare(x):\n    return fill(x, 128)\n"),
    ]
    kinds = []
    for path, text in edits:
        before = model.project
        assert model.project_for(path, text) is not None
        assert model.project is not before
        kinds.append("kept" if model.kept else "fresh")
        assert path not in model.kept
        texts[path] = text
        assert _kept(model, texts) == _fresh(texts), path
    # only the edited module's calls are resolved again unless it changed what others resolve against
    assert kinds == ["kept", "kept", "fresh", "fresh", "fresh"]


def test_changed_contexts_are_reported_and_a_close_goes_back_to_disk(tmp_path):
    pkg = _tree(tmp_path)
    model = WorkspaceModel()
    model.build([str(tmp_path)])
    pieces, front = str(pkg / "pieces.py"), str(pkg / "front.py")

    class Checked:  # what the server keeps of a document's last check: the digest of the context it read
        def __init__(self, path):
            self.context_digest = model.digest(path)
            self.nki_file = None

    docs = [("pieces", pieces, Checked(pieces)), ("front", front, Checked(front))]
    assert _stale(model, docs, refresh=False) == []
    unguarded = FILES["front.py"].replace("    assert n % 128 == 0\n", "")
    model.project_for(front, unguarded)
    # the caller lost its guard: the helper's context changed; the caller's own too (its module changed)
    assert _stale(model, docs, refresh=False) == ["pieces", "front"]
    docs = [("pieces", pieces, Checked(pieces)), ("front", front, Checked(front))]
    assert model.close(front)
    assert _stale(model, docs, refresh=True) == ["pieces", "front"]  # the file on disk has the guard
    assert model.digest(pieces) == _fresh({str(pkg / n): t for n, t in FILES.items()})[pieces]
    # a change on disk of a file nobody has open reaches the others' contexts after a refresh
    (pkg / "front.py").write_text(unguarded, encoding="utf-8")
    docs = [("pieces", pieces, Checked(pieces))]
    assert _stale(model, docs, refresh=True) == ["pieces"]
    (pkg / "extra.py").write_text(HEAD + "from .pieces import fill\n", encoding="utf-8")
    model.refresh()
    assert str(pkg / "extra.py") in model.order


NKI_LIBRARY = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "nki-library@d2ad3a5"


@pytest.mark.skipif(not NKI_LIBRARY.is_dir(), reason="the nki-library corpus is absent (<repo>/../shared/corpora)")
def test_every_nki_library_file_gets_what_check_of_the_folder_gives_it():
    from lsp_server import engine
    from lsp_server.settings import Settings
    from nki_assist.check import CheckOptions, check_paths

    model = WorkspaceModel()
    model.build([str(NKI_LIBRARY)])
    assert len(model.order) == 173 and model.problem is None
    report = check_paths([str(NKI_LIBRARY)], CheckOptions())
    folder = {r.path: sorted((f.rule, f.line, f.column, f.message) for f in r.findings) for r in report.files}
    differ, checked, in_project = [], 0, 0
    for path in model.order:
        text = Path(path).read_text(encoding="utf-8")
        analysis = engine.analyze("file://" + path, path, "python", 1, text, Settings(), reuse=False, model=model)
        if analysis.language != "nki":
            continue
        checked += 1
        in_project += analysis.in_project
        if sorted((f.rule, f.line, f.column, f.message) for f in analysis.findings) != folder.get(path, []):
            differ.append(path)
    assert differ == [] and checked == in_project > 100
