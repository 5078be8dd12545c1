"""Parsing Python in several threads at once never fails (CPython < 3.13 shares the AST converter's recursion
depth between threads, gh-106905: a review's static checks parse while its kernel runs ahead)."""

from __future__ import annotations

import ast
import sys
import threading

import nki_assist  # noqa: F401  (serializes ast.parse on the interpreters that need it)

DEEP = "x = " + "(" * 40 + "1" + ")" * 40 + "\n" + "def f(a):\n    return [[a + i for i in range(3)] for _ in range(2)]\n" * 50


def test_ast_parse_is_serialized_where_cpython_needs_it():
    assert getattr(ast.parse, "_nki_assist_serialized", False) == (sys.version_info < (3, 13))


def test_concurrent_parses_all_succeed():
    errors: list[BaseException] = []

    def work():
        try:
            for _ in range(150):
                assert len(ast.parse(DEEP).body) == 51
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
