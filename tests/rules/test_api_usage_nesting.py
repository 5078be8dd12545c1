"""api_usage groups each outermost kernel with the kernels inside its lines in one sort and one sweep (issue 44,
case 8: the test per pair of kernels was quadratic, 4.7 million pairs in a 50k-line module); the groups are those
of the pairwise definition."""

from __future__ import annotations

import random
from types import SimpleNamespace

from nki_assist.rules.nki.api_usage import _outer_kernels


def _pairwise(kernels):
    outer = [k for k in kernels if not any(o is not k and o.line <= k.line and k.end_line <= o.end_line
                                           for o in kernels)]
    return [(k, [x for x in kernels if k.line <= x.line and x.end_line <= k.end_line]) for k in outer]


def _nested(rng: random.Random, start: int, end: int, depth: int) -> list:
    out, line = [], start
    while line < end and rng.random() < 0.8:
        length = rng.randint(1, max(1, (end - line) // 2))
        k = SimpleNamespace(line=line, end_line=min(end, line + length))
        out.append(k)
        if depth < 3 and k.end_line - k.line > 2:
            out += _nested(rng, k.line + 1, k.end_line, depth + 1)
        line = k.end_line + 1
    return out


def test_the_sweep_gives_the_pairwise_groups():
    rng = random.Random(44)
    for _ in range(100):
        kernels = _nested(rng, 1, 400, 0)
        rng.shuffle(kernels)  # the file's kernel order is kept, whatever it is
        assert _outer_kernels(kernels) == _pairwise(kernels)


def test_the_same_lines_twice_are_never_outer():
    a, b = SimpleNamespace(line=1, end_line=9), SimpleNamespace(line=1, end_line=9)
    c = SimpleNamespace(line=20, end_line=30)
    assert _outer_kernels([a, b, c]) == _pairwise([a, b, c]) == [(c, [c])]


def test_many_kernels_are_grouped_in_linear_time():
    kernels = [SimpleNamespace(line=10 * i + 1, end_line=10 * i + 9) for i in range(20_000)]
    groups = _outer_kernels(kernels)
    assert len(groups) == 20_000 and all(g[1] == [g[0]] for g in groups)  # pairwise: 400 million tests
