"""Contracts at the bottom: what a kernel run produces (result, trace entries, resource peaks, provenance).

The simulator fills these, every backend returns them, and numerics/perf/review read them; keeping them
here lets sim and toolchain share them without either importing the other's internals.
"""
