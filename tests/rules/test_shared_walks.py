"""The rules' shared walks of a file's tree (nki_common.walk, walk_nodes, scope_nodes) give exactly what each rule
computed on its own before (ast.walk's nodes in ast.walk's order, less the operator and context singletons no rule
looks for), live only while the checks run, and the token
prefilters that let a rule skip a file never skip one the rule reports on, Python's NFKC-normalised names included."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from nki_assist.api.hardware import get_target
from nki_assist.parse.nki import parse_nki
from nki_assist.parse.pyast import child_nodes
from nki_assist.rules.nki import common as nki_common
from nki_assist.rules.nki.common import module_tree, scope_nodes, scope_nodes_of, source_has, walk, walk_nodes
from nki_assist.rules.nki.run import run_nki_rules

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rules"
# files with nested defs, decorators, comprehensions, lambdas, if/elif chains and try blocks
SAMPLES = [FIX / "NKI215" / "pos_legacy.py", FIX / "NKI521" / "pos_equality.py", FIX / "NKI213" / "pos_new.py",
           *sorted((FIX / "NKI214").glob("*.py")), *sorted((FIX / "NKI212").glob("*.py")),
           *sorted((FIX / "NKI520").glob("*.py"))]


_SINGLETONS = (ast.expr_context, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _ast_walk(node):
    return [n for n in ast.walk(node) if not isinstance(n, _SINGLETONS)]


def _own_nodes(fn):
    """The depth-first walk NKI520 made of a def's own nodes before the walks were shared (less the singletons)."""
    stack = list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, _SINGLETONS):
            continue
        yield n
        for c in ast.iter_child_nodes(n):
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(c)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shared_walks_are_ast_walk_node_for_node(path):
    nf = parse_nki(path.read_text(), str(path))
    tree = module_tree(nf)
    assert tree is not None
    everything = list(ast.walk(tree))
    assert len(everything) > 30
    for node in everything:
        assert child_nodes(node) == list(ast.iter_child_nodes(node))
    subjects = [tree] + [n for n in everything if isinstance(n, (ast.FunctionDef, ast.stmt))]
    for node in subjects:
        got, want = walk(nf, node), _ast_walk(node)
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
        assert walk(nf, node) is got  # once per node
        typed = walk_nodes(nf, node, (ast.Name, ast.Call))
        assert typed == [n for n in want if isinstance(n, (ast.Name, ast.Call))]
    for fn in (n for n in everything if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        got, want = scope_nodes(nf, fn), list(_own_nodes(fn))
        assert len(got) == len(want) and all(a is b for a, b in zip(got, want))
        typed = scope_nodes_of(nf, fn, (ast.Call, ast.Assign))
        assert typed == [n for n in want if isinstance(n, (ast.Call, ast.Assign))]
        assert scope_nodes_of(nf, fn, (ast.Call, ast.Assign)) is typed  # once per def and types
    # a node that is not in the file's tree (a def's copy without decorators, a synthetic wrapper) walks too
    for fn in (n for n in everything if isinstance(n, ast.FunctionDef) and n.decorator_list):
        bare = ast.FunctionDef(name=fn.name, args=fn.args, body=fn.body, decorator_list=[], returns=None)
        assert walk(nf, bare) == _ast_walk(bare) and len(walk(nf, bare)) < len(walk(nf, fn))


def test_the_walks_live_only_while_the_checks_run():
    path = FIX / "NKI212" / sorted(p.name for p in (FIX / "NKI212").glob("pos*.py"))[0]
    nf = parse_nki(path.read_text(), str(path))
    walk(nf, module_tree(nf))
    assert "walk" in nf.__dict__["_module_tree"]
    assert any(f.rule == "NKI212" for f in run_nki_rules(nf, get_target("trn2")))  # the rules walked the tree
    assert "walk" not in nf.__dict__["_module_tree"]
    assert not {"_source_text", "_source_lower"} & set(nf.__dict__)  # nor the prefilters' copies of the text
    # a reused file with new lines gets new walks, not the old text's
    tree = module_tree(nf)
    first = walk(nf, tree)
    nf.lines = list(nf.lines)
    assert module_tree(nf) is not tree and walk(nf, module_tree(nf)) is not first


def _nf(text: str):
    return parse_nki(text, "prefilter_nki.py")


@pytest.mark.parametrize("text, tokens, lower, expected", [
    ("x = get_nc_version()\n", ("get_nc_version",), False, True),
    ("x = nisa.nc_version.gen3\n", ("get_nc_version",), False, False),
    ("y = apply_Dropout(p)\n", ("dropout",), True, True),
    ("y = apply_Dropout(p)\n", ("dropout",), False, False),
    # arrows, dashes and math in comments cannot spell a name: the prefilter still holds
    ("# a × b → c — d ≤ e, ² and √\nx = 1\n", ("dropout",), True, False),
    # fullwidth letters, ligatures, the Kelvin sign and accents normalise (NFKC) to ASCII letters in names
    ("y = ｄropout(p)\n", ("dropout",), True, True),
    ("y = get_nc_version\N{LATIN SMALL LIGATURE FI}x()\n", ("dropout",), False, True),
    ("\N{KELVIN SIGN} = 1\n", ("dropout",), True, True),
    ("# café\nx = 1\n", ("dropout",), True, True),
])
def test_source_has_skips_only_files_no_name_can_spell_a_token(text, tokens, lower, expected):
    assert source_has(_nf(text), *tokens, lower=lower) is expected


def test_nfkc_spelled_names_still_reach_the_gated_rules():
    """`ｄropout` (a fullwidth d) is the name `dropout` to Python: NKI215 reports the same sums as for the ASCII file,
    and NKI521 the same comparisons for a fullwidth `ｇet_nc_version`."""
    target = get_target("trn2")

    def found(rule: str, text: str):
        return [(f.line, f.message) for f in run_nki_rules(_nf(text), target) if f.rule == rule]

    dropout = (FIX / "NKI215" / "pos_legacy.py").read_text()
    wide = dropout.replace("dropout", "\uff44ropout")
    assert "dropout" not in wide.lower()
    assert [line for line, _ in found("NKI215", wide)] == [19, 22]
    assert found("NKI215", wide) == found("NKI215", dropout)
    version = (FIX / "NKI521" / "pos_equality.py").read_text()
    wide = version.replace("get_nc_version", "\uff47et_nc_version")
    assert "get_nc_version" not in wide
    assert sorted(line for line, _ in found("NKI521", wide)) == [11, 17]
    assert found("NKI521", wide) == found("NKI521", version)


def test_token_gated_rules_skip_files_without_the_token(monkeypatch):
    """Files with no `&` and no *dropout* name never reach NKI213's and NKI215's scans of the module."""
    callers: list[str] = []
    real = nki_common.walk_nodes

    def spy(nf, node, types):
        callers.append(sys._getframe(1).f_code.co_name)
        return real(nf, node, types)

    from nki_assist.rules.nki import dropout as nki_dropout, slips as nki_slips
    monkeypatch.setattr(nki_dropout, "walk_nodes", spy)
    monkeypatch.setattr(nki_slips, "walk_nodes", spy)
    target = get_target("trn2")
    guard = "    assert rate & 128 == 0\n    probs[...] ="
    text = (FIX / "NKI215" / "pos_legacy.py").read_text().replace("    probs[...] =", guard)
    assert {"NKI213", "NKI215"} <= {f.rule for f in run_nki_rules(_nf(text), target)}
    assert {"sum_after_dropout", "bit_test_as_divisibility_guard"} <= set(callers)
    callers.clear()
    plain = (FIX / "NKI215" / "pos_legacy.py").read_text().replace("apply_dropout", "apply_mask") \
        .replace("nl.dropout", "nl.multiply")
    assert not any(f.rule in ("NKI213", "NKI215") for f in run_nki_rules(_nf(plain), target))
    assert not {"sum_after_dropout", "bit_test_as_divisibility_guard"} & set(callers)


CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"


def test_nki211_statement_gate_never_skips_a_kernel_with_two_axes():
    """NKI211 skips a kernel whose statements name fewer than two axis symbols before walking it: an upper bound
    of the symbols `_Roles` keeps, so every kernel with two is still read (fixtures, and AWS's nki-library when
    the corpora are beside the checkout)."""
    from nki_assist.rules.nki.common import kernel_function
    from nki_assist.rules.nki.dim_roles import _may_have_two_axes, _Roles

    files = sorted(FIX.glob("**/*.py"))
    library = CORPORA / "nki-library@d2ad3a5"
    if library.is_dir():
        files += sorted(library.glob("**/*.py"))
    kept = skipped = 0
    for path in files:
        nf = parse_nki(path.read_text(encoding="utf-8", errors="replace"), str(path))
        for k in nf.kernels:
            fn = kernel_function(nf, k)
            if fn is None:
                continue
            roles = _Roles(fn, walk_nodes(nf, fn, ast.Assign), walk_nodes(nf, fn, ast.Compare))
            if _may_have_two_axes(fn):
                kept += 1
            else:
                skipped += 1
                assert len(roles.symbols) < 2, (path, k.name, roles.symbols)
    assert kept > 5 and skipped > 5


def test_child_lists_of_hand_built_nodes_are_ast_iter_child_nodes():
    """The per-type child listers (parse/pyast.py) read fields directly; nodes built by hand (missing list fields,
    None where a node belongs, `**` keys of a dict) list what ast.iter_child_nodes lists, less the singletons for
    branch_nodes."""
    from nki_assist.parse.pyast import branch_nodes

    name = ast.Name(id="a", ctx=ast.Load())
    nodes = [ast.arguments(), ast.FunctionDef(name="f", args=ast.arguments(), body=[ast.Pass()], decorator_list=[]),
             ast.Dict(keys=[None, name], values=[ast.Name(id="b", ctx=ast.Load()), ast.Constant(1)]),
             ast.Assign(targets=[ast.Name(id="x", ctx=ast.Store())], value=None),
             ast.BinOp(left=ast.Constant(1), op=ast.Add(), right=name), ast.Compare(left=name, ops=[ast.Eq()]),
             ast.Call(func=name, args=[ast.Starred(value=name, ctx=ast.Load())], keywords=[]), ast.Module()]
    for node in nodes:
        want = list(ast.iter_child_nodes(node))
        assert child_nodes(node) == want, ast.dump(node)
        assert branch_nodes(node) == [c for c in want if not isinstance(c, _SINGLETONS)], ast.dump(node)
    assert child_nodes(nodes[2]) == [name, nodes[2].values[0], nodes[2].values[1]]


_BLOCKY = '''import neuronxcc.nki.language as nl


def kernel(a, b):
    x = 1
    try:
        y = a
        if y:
            z = [w for w in b if w]
    except ValueError as e:
        z = 2
        for i in nl.affine_range(4):
            x += i
    except (KeyError, TypeError):
        pass
    else:
        with open(a) as f:
            z = f
    finally:
        x = 0
    match b:
        case [1, *rest] if rest:
            z = rest
        case {"k": v}:
            while v:
                v = v - 1
        case _:
            class Inner:
                q = 1

                def m(self):
                    return self.q
    return lambda t: t if x else z
'''


@pytest.mark.parametrize("path", SAMPLES[:3] + [None], ids=lambda p: "blocky" if p is None else p.name)
def test_statement_walks_are_the_statements_of_the_whole_walk(path):
    """walk_nodes for statement types reads the blocks only (no walk of the expressions) when the whole walk is not
    at hand: the same statements in the same order, try/except/else/finally, match cases and nested scopes
    included."""
    text = _BLOCKY if path is None else path.read_text()
    types = [ast.If, ast.Assign, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr), ast.stmt,
             (ast.FunctionDef, ast.AsyncFunctionDef), (ast.For, ast.While, ast.Pass, ast.Return, ast.ClassDef)]
    nf = parse_nki(text, "blocky.py")
    tree = module_tree(nf)
    subjects = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    for node in subjects:
        for t in types:
            got = walk_nodes(nf, node, t)
            assert got == [n for n in ast.walk(node) if isinstance(n, t)], (ast.dump(node)[:80], t)
    assert not nf.__dict__["_module_tree"]["walk"]["walks"]  # no whole walk was made
    assert len(walk_nodes(nf, tree, ast.stmt)) > 10


def test_nki212_text_gate_keeps_nfkc_spelled_reads():
    """NKI212 walks a later statement only when its text names the loop variable: a read spelled with a fullwidth
    letter (`ｉ`, the name `i` to Python) is still reported, and a statement that never names it is not walked."""
    target = get_target("trn2")
    text = (FIX / "NKI212" / "pos_new.py").read_text()
    ascii_found = [(f.line, f.column) for f in run_nki_rules(_nf(text), target) if f.rule == "NKI212"]
    assert ascii_found == [(15, 35)]
    wide = text.replace("src=x[i * 128:(i + 1)", "src=x[\uff49 * 128:(\uff49 + 1)")
    assert "x[i" not in wide.split("\n")[14]
    assert [(f.line, f.column) for f in run_nki_rules(_nf(wide), target) if f.rule == "NKI212"] == [(15, 35)]
    from nki_assist.rules.nki.loopvars import _mentions

    nf = _nf(text)
    body = nki_common.kernel_function(nf, nf.kernels[0]).body
    assert [_mentions(nf, st, "i") for st in body] == [False, False, True, False, True, False]
