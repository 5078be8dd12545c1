"""The Python-level pass of an edited document (project/incremental.py) gives what a whole-file pass gives:
the same module index and the same pyflakes findings, on our fixtures and on the public corpora when
present, before and after edits."""

from __future__ import annotations

import ast
import random
import sys
from pathlib import Path

import pytest
from pyflakes import checker

from nki_assist.parse.nki import is_nki_source
from nki_assist.project.incremental import PythonMemo
from nki_assist.project.index import index_module
from nki_assist.rules.nki.python import _REDEFINED, _UNDEFINED

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
from corpora import NKI_LIBRARY, SAMPLES_LEGACY, nki_sources

FIXTURES = sorted(p for p in (ROOT / "tests" / "fixtures").rglob("*.py")
                  if is_nki_source(p.read_text(encoding="utf-8", errors="replace")))


def _ours(msgs) -> list[tuple]:
    return sorted((type(m).__name__, m.lineno, getattr(m, "col", 0), m.message_args) for m in msgs
                  if isinstance(m, _UNDEFINED + _REDEFINED))


def _whole(text: str) -> list[tuple]:
    return _ours(checker.Checker(ast.parse(text), filename="k.py").messages)


def _compiles(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


def _texts() -> list[tuple[str, str]]:
    out = [(p.name, p.read_text(encoding="utf-8")) for p in FIXTURES]
    public = nki_sources(NKI_LIBRARY, SAMPLES_LEGACY)
    out += [(f"{s}:{n}", t) for s, n, t in public[::6]]  # a fixed sample: the whole corpora take minutes
    return [(n, t) for n, t in out if _compiles(t)]


def _edits(text: str, rng: random.Random, n: int = 3) -> list[str]:
    """Versions of `text` after appending a statement to a line inside some function, one after another."""
    lines = text.split("\n")
    out = []
    for _ in range(n):
        i = rng.randrange(len(lines))
        ln = lines[i]
        if ln.startswith(("    ", "\t")) and ln.strip() and not ln.rstrip().endswith(("(", ",", "[", "{", "\\")):
            indent = ln[: len(ln) - len(ln.lstrip())]
            lines.insert(i + 1, f"{indent}_edit_{i} = undefined_after_edit_{i}")
        else:
            lines.insert(i, "")
        candidate = "\n".join(lines)
        if _compiles(candidate):
            out.append(candidate)
        else:
            lines = text.split("\n")
    return out


def test_a_document_edited_gives_the_whole_file_results():
    texts = _texts()
    assert len(texts) >= 30
    rng = random.Random(25)
    compared = 0
    for name, text in texts:
        memo = PythonMemo()
        for version in [text] + _edits(text, rng):
            tree = memo.tree(version, "k.py")
            assert memo.exact or "global" in version or "import *" in version, name
            assert _ours(memo.pyflakes(tree, "k.py")) == _whole(version), name
            assert index_module("k.py", version, memo=memo) == index_module("k.py", version), name
            compared += 1
    assert compared >= 60


def test_an_edit_reanalyses_only_the_edited_function():
    src = "import nki\n\n\ndef a(x):\n    return x\n\n\ndef b(y):\n    return y\n"
    memo = PythonMemo()
    memo.pyflakes(memo.tree(src, "k.py"), "k.py")
    before = {k[1]: v for k, v in memo.flakes.items()}  # def line -> that function's messages (one list each)
    edited = src.replace("return y", "return y + z")
    found = memo.pyflakes(memo.tree(edited, "k.py"), "k.py")
    after = {k[1]: v for k, v in memo.flakes.items()}
    assert after[4] is before[4] and after[8] is not before[8]
    assert [m.message_args for m in found if isinstance(m, _UNDEFINED)] == [("z",)]


@pytest.mark.parametrize("src", [
    "from os import *\n\ndef f():\n    return path\n",  # a * import: pyflakes can't tell; whole-module pass
    "X = 1\n\ndef f():\n    global X\n    X = 2\n\ndef g():\n    return Y\n",
])
def test_scope_changing_statements_fall_back_to_the_whole_module(src):
    memo = PythonMemo()
    assert _ours(memo.pyflakes(memo.tree(src, "k.py"), "k.py")) == _whole(src)


def test_undefined_local_names_the_module_binding_pyflakes_sees_across_edits():
    # "defined in enclosing scope on line N": N is the module's last binding of the name (here the re-import on
    # line 8, after the function), and it moves when an edit above moves that binding
    src = ("import numpy as np\n"
           "import numpy as nl\n"
           "\n"
           "def k(x):\n"
           "    y = nl.exp(x)\n"
           "    nl = 3\n"
           "    return y + nl\n"
           "import math as nl\n")
    memo = PythonMemo()
    first = _ours(memo.pyflakes(memo.tree(src, "k.py"), "k.py"))
    assert first == _whole(src) and ("UndefinedLocal", 5, 8, ("nl", 8)) in first
    edited = src.replace("import math as nl\n", "\n\nimport math as nl\n")  # only the last binding moves
    again = _ours(memo.pyflakes(memo.tree(edited, "k.py"), "k.py"))
    assert again == _whole(edited) and ("UndefinedLocal", 5, 8, ("nl", 10)) in again


def _all(msgs) -> list[tuple]:
    return [(type(m).__name__, m.lineno, getattr(m, "col", 0), m.message_args) for m in msgs]


def test_the_untying_checker_reports_what_pyflakes_reports():
    """`flakes` (pyflakes with its per-node test made cheaper, project/incremental.py) gives pyflakes' own
    messages, every kind, in its order, on every fixture and every public kernel file, and unties the tree."""
    from nki_assist.project.incremental import flakes

    texts = [(p.name, p.read_text(encoding="utf-8")) for p in FIXTURES]
    texts += [(f"{s}:{n}", t) for s, n, t in nki_sources(NKI_LIBRARY, SAMPLES_LEGACY)[::3]]
    late = ('"""doc"""\nfrom __future__ import annotations\nimport os\nfrom __future__ import division\n\n'
            'def f():\n    from __future__ import braces\n    return undefined\n')
    texts.append(("futures", late))
    compared = reported = 0
    for name, text in texts:
        if not _compiles(text):
            continue
        want = _all(checker.Checker(ast.parse(text), filename="k.py").messages)
        tree = ast.parse(text)
        assert _all(flakes(tree, "k.py")) == want, name
        # (the operator and context singletons are shared by every tree: the plain Checker above tied them)
        assert not any(hasattr(n, "_pyflakes_parent") for n in ast.walk(tree) if n._attributes), name
        compared += 1
        reported += len(want)
    assert compared >= 30 and reported >= 30
    assert "LateFutureImport" in {m[0] for m in want} and "FutureFeatureNotDefined" in {m[0] for m in want}


def test_the_untying_checker_reads_typing_and_annotations_as_pyflakes_does():
    """The checker skips pyflakes' typing tests for callees no typing import binds, and the constants outside
    annotations: string annotations, typing's cast/TypeVar/NamedTuple/TypedDict (bare, aliased, through the
    module, shadowed) and format strings still give pyflakes' messages."""
    from nki_assist.project.incremental import flakes

    text = (
        "import typing as t\nfrom typing import cast as c, TypeVar, NamedTuple\n"
        "from typing_extensions import TypedDict\nimport typing_extensions\n\n"
        "T = TypeVar('T', 'Missing1', bound='Missing2')\nP = NamedTuple('P', [('a', 'Missing3')])\n"
        "D = TypedDict('D', {'a': 'Missing4'})\nE = typing_extensions.TypedDict('E', b='Missing5')\n"
        "x: 'Missing6' = c('Missing7', 1)\ny = t.cast('Missing8', 2)\n\n"
        "def f(a: 'Missing9') -> 'Missing10':\n    cast = print\n    cast('not a type')\n"
        "    c = print\n    c('Missing11')\n    u = '{} {}'.format(1)\n    v = '%s %s' % (1,)\n"
        "    w = f'plain'\n    return {1: 2, 1: 3}, a is 'x', undefined_name\n\n"
        "def g():\n    import typing\n    return typing.cast('Missing12', 3)\n")
    want = _all(checker.Checker(ast.parse(text), filename="k.py").messages)
    assert _all(flakes(ast.parse(text), "k.py")) == want
    kinds = {m[0] for m in want}
    assert {"UndefinedName", "StringDotFormatMissingArgument", "PercentFormatPositionalCountMismatch",
            "FStringMissingPlaceholders", "MultiValueRepeatedKeyLiteral", "IsLiteral"} <= kinds
    undefined = {m[3][0] for m in want if m[0] == "UndefinedName"}
    assert {"Missing1", "Missing6", "Missing7", "Missing8", "Missing9", "Missing12", "undefined_name"} <= undefined
    assert "Missing11" not in undefined  # `c` rebound in f: its argument is a plain string there


def test_child_nodes_are_the_ast_children_less_the_operator_singletons():
    from nki_assist.parse.pyast import branch_nodes as child_nodes

    singletons = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)
    nodes = 0
    for _, text in _texts():
        for node in ast.walk(ast.parse(text)):
            assert child_nodes(node) == [c for c in ast.iter_child_nodes(node) if not isinstance(c, singletons)]
            nodes += 1
    assert nodes > 10_000
