"""Eval suite: score review feedback against gold reviews (gold.py, match.py, metrics.py, runner)."""
