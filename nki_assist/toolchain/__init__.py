"""Backends that run kernels: builtin simulator (default), real Neuron toolchain, nvcc."""
