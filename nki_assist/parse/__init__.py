"""Front ends: tree-sitter parsers that turn NKI (nki.py) and CUDA (cuda.py) sources into facts."""
