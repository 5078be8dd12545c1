"""nki-assist: reviews NKI kernels for AWS Trainium and the CUDA kernels they were ported from."""

import ast as _ast
import sys as _sys
import threading as _threading

__version__ = "0.1.0"

if _sys.version_info < (3, 13) and not getattr(_ast.parse, "_nki_assist_serialized", False):
    # CPython before 3.13 keeps the AST converter's recursion depth in state shared by threads (gh-106905):
    # two threads parsing at once (a review's static checks while its kernel runs ahead) now and then fail
    # with "SystemError: AST constructor recursion depth mismatch". Parses are serialized in this process.
    _PARSE_LOCK = _threading.RLock()
    _stdlib_parse = _ast.parse

    def _serialized_parse(*args, **kwargs):
        with _PARSE_LOCK:
            return _stdlib_parse(*args, **kwargs)

    _serialized_parse._nki_assist_serialized = True
    _serialized_parse.__doc__ = _stdlib_parse.__doc__
    _ast.parse = _serialized_parse
