"""CUDA fact collectors over the walker core (parse/cuda_walk.py): one module per kind of fact.

The walker dispatches each node type to one collector function (`_HANDLERS`); collectors receive the walker
as `ex` (source text, positions, constant folding, the current kernel's state `ex.ks`). Adding a fact kind is
one module here, its handler entries in the walker, and a test.
"""
