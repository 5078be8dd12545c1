"""nki-assist: reviews NKI kernels for AWS Trainium and the CUDA kernels they were ported from."""

__version__ = "0.1.0"
