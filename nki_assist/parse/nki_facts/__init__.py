"""NKI fact collectors over the walker core (parse/nki_extract.py): one module per kind of fact.

The walker visits statements once, in source order, with the loop stack (`_Ctx`); for each statement or call
it hands the node to the collector of that kind (loops, asserts, writes, calls -> allocations, matmul, tags,
shapes). Adding a fact kind is one module here plus the dispatch line in the walker and a test.
"""
