"""The NKI API catalogue: every `nl.*` / `nisa.*` API nki-assist knows, one entry each.

Each entry says which engine runs it by default, whether it exists in the legacy (`neuronxcc.nki`, returns
a tile) and the new (`nki`, writes `dst`) dialect, how much of it the built-in simulator models, its cost
class, and -- where the parser needs them -- the positional parameters of both dialects. The parser's role
table (`parse/nki_extract.py:ROLES`), the simulator's list of documented APIs it stops on
(`sim/runner.py:NOT_MODELLED`) and the cost model's one-pass ops (`perf/cost.py`) are derived from here;
`tests/sim/test_api_catalogue.py` checks the simulator's dialect adapters against it (every adapter has an
entry with the right dialects, every modelled entry has an adapter, recorded parameters match the adapter's).

What each NKI *release* has (names, signatures, return convention, introduced/deprecated/removed) is not
kept here: it is the generated, versioned API table (`nki_assist/api`, docs/api-table.md), which also takes
this catalogue's legacy entries as the legacy dialect's names. `documented()` asks it.

Sources: the NKI API reference, `https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/` (module
pages `nki.language`, `nki.isa`), summarised in shared/reference/nki-facts.md §2.3-§2.4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from . import table

DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/"


@dataclass(frozen=True)
class Api:
    name: str  # "nl.exp", "nisa.tensor_scalar"
    # default engine: tensor | vector | scalar | gpsimd | dma; None: no instruction, or the call decides
    engine: str | None
    kind: Literal["call", "alloc", "iterator", "index", "buffer", "query", "debug", "directive", "dtype", "method",
                  "collective"] = "call"
    legacy: bool = True  # exists in the legacy dialect (neuronxcc.nki)
    new: bool = True  # exists in the new dialect (nki 0.2+)
    # full: modelled; partial: modelled, but some documented variants stop the run as a tool limit (SIM117);
    # none: documented NKI the simulator does not model (SIM117).
    sim: Literal["full", "partial", "none"] = "full"
    one_pass: bool = False  # VectorE cost ~N (one input pass) rather than ~2N (the LISA cost table)
    # Positional parameters (legacy returns-style, new dst-style), recorded where the parser assigns roles.
    params: tuple[tuple[str, ...], tuple[str, ...]] | None = None

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]

    @property
    def module(self) -> str:
        return self.name.rsplit(".", 1)[0]

    @property
    def doc_url(self) -> str:
        page = {"nl": "nki.language", "nisa": "nki.isa"}.get(self.module, self.module)
        return f"{DOCS}generated/{page}.{self.short}.html"


CATALOGUE: tuple[Api, ...] = (
    Api("nl.abs", "scalar"),
    Api("nl.add", "vector"),
    Api("nl.affine_range", None, kind="iterator"),
    Api("nl.arange", None, kind="index"),
    Api("nl.arctan", "scalar"),
    Api("nl.bitwise_and", "vector"),
    Api("nl.bitwise_not", "scalar"),
    Api("nl.bitwise_or", "vector"),
    Api("nl.bitwise_xor", "vector"),
    Api("nl.broadcast_to", None),
    Api("nl.ceil", "scalar"),
    Api("nl.copy", "vector", one_pass=True, params=(("x",), ("dst", "x"))),
    Api("nl.copy_", "scalar"),
    Api("nl.cos", "scalar"),
    Api("nl.device_print", None, kind="debug"),
    Api("nl.divide", "vector"),
    Api("nl.dropout", "vector", sim="partial"),
    Api("nl.ds", None, kind="index"),
    Api("nl.dynamic_range", None, kind="iterator", sim="partial"),
    Api("nl.empty_like", None, kind="alloc"),
    Api("nl.equal", "vector"),
    Api("nl.erf", "scalar"),
    Api("nl.erf_dx", "scalar"),
    Api("nl.exp", "scalar", one_pass=True),
    Api("nl.exp2", "scalar"),
    Api("nl.finfo", None, kind="query"),
    Api("nl.floor", "scalar"),
    Api("nl.fmod", "vector"),
    Api("nl.fori_loop", None, kind="iterator", sim="partial"),
    Api("nl.full", None, kind="alloc"),
    Api("nl.full_like", None, kind="alloc"),
    Api("nl.gelu", "scalar"),
    Api("nl.gelu_apprx_sigmoid", "scalar"),
    Api("nl.gelu_apprx_tanh", "scalar"),
    Api("nl.gelu_dx", "scalar"),
    Api("nl.greater", "vector"),
    Api("nl.greater_equal", "vector"),
    Api("nl.hbm", None, kind="buffer"),
    Api("nl.identity", "scalar"),
    Api("nl.invert", "scalar"),
    Api("nl.left_shift", "vector"),
    Api("nl.less", "vector"),
    Api("nl.less_equal", "vector"),
    Api("nl.load", "dma", params=(("src",), ("dst", "src"))),
    Api("nl.load_transpose2d", "dma", params=(("src",), ("dst", "src"))),
    Api("nl.log", "scalar"),
    Api("nl.log2", "scalar"),
    Api("nl.logical_and", "vector"),
    Api("nl.logical_not", "scalar"),
    Api("nl.logical_or", "vector"),
    Api("nl.logical_xor", "vector"),
    Api("nl.loop_reduce", "vector"),
    Api("nl.matmul", "tensor", params=(("x", "y"), ("dst", "x", "y"))),
    Api("nl.max", "vector"),
    Api("nl.maximum", "vector"),
    Api("nl.mean", "vector"),
    Api("nl.min", "vector"),
    Api("nl.minimum", "vector"),
    Api("nl.mish", "scalar"),
    Api("nl.mod", "vector"),
    Api("nl.multiply", "vector"),
    Api("nl.nc", None, kind="index"),
    Api("nl.ndarray", None, kind="alloc"),
    Api("nl.negative", "scalar"),
    Api("nl.no_reorder", None, kind="directive", sim="partial"),
    Api("nl.not_equal", "vector"),
    Api("nl.num_programs", None, kind="query"),
    Api("nl.ones", None, kind="alloc"),
    Api("nl.ones_like", None, kind="alloc"),
    Api("nl.par_dim", None, kind="index"),
    Api("nl.power", "vector"),
    Api("nl.private_hbm", None, kind="buffer"),
    Api("nl.prod", "vector"),
    Api("nl.program_id", None, kind="query"),
    Api("nl.program_ndim", None, kind="query"),
    Api("nl.psum", None, kind="buffer"),
    Api("nl.reciprocal", "scalar"),
    Api("nl.relu", "scalar"),
    Api("nl.right_shift", "vector"),
    Api("nl.rsqrt", "scalar"),
    Api("nl.sbuf", None, kind="buffer"),
    Api("nl.sequential_range", None, kind="iterator"),
    Api("nl.shared_constant", None, kind="alloc"),
    Api("nl.shared_hbm", None, kind="buffer"),
    Api("nl.sigmoid", "scalar"),
    Api("nl.sign", "scalar"),
    Api("nl.silu", "scalar"),
    Api("nl.silu_dx", "scalar"),
    Api("nl.sin", "scalar"),
    Api("nl.softmax", None),
    Api("nl.softplus", "scalar"),
    Api("nl.spmd_dim", None, kind="index"),
    Api("nl.sqrt", "scalar"),
    Api("nl.square", "scalar"),
    Api("nl.static_range", None, kind="iterator"),
    Api("nl.store", "dma", params=(("dst", "value"), ("dst", "value"))),
    Api("nl.subtract", "vector"),
    Api("nl.sum", "vector"),
    Api("nl.tan", "scalar"),
    Api("nl.tanh", "scalar"),
    Api("nl.transpose", "tensor", one_pass=True),
    Api("nl.trunc", "scalar"),
    Api("nl.var", "vector"),
    Api("nl.where", "vector"),
    Api("nl.zeros", None, kind="alloc"),
    Api("nl.zeros_like", None, kind="alloc"),
    Api("nisa.activation", "scalar", one_pass=True, params=(("op", "data"), ("dst", "op", "data"))),
    Api("nisa.activation_reduce", "scalar", params=(("op", "data"), ("dst", "op", "data"))),
    Api("nisa.affine_select", "gpsimd", one_pass=True),
    Api("nisa.bn_aggr", "vector"),
    Api("nisa.bn_stats", "vector", one_pass=True),
    Api("nisa.dma_compute", "dma", legacy=False, sim="partial"),
    Api("nisa.dma_copy", "dma", params=(("dst", "src"), ("dst", "src"))),
    Api("nisa.dma_transpose", "dma", sim="partial", params=(("src",), ("dst", "src"))),
    Api("nisa.exponential", "scalar", legacy=False, sim="partial", params=(("data",), ("dst", "data"))),
    Api("nisa.get_nc_version", None, kind="query"),
    Api("nisa.iota", "gpsimd", one_pass=True),
    Api("nisa.max8", "vector", sim="partial"),
    Api("nisa.memset", "vector", one_pass=True, params=(("shape", "value", "dtype"), ("dst", "value"))),
    Api("nisa.nc_matmul", "tensor", params=(("stationary", "moving"), ("dst", "stationary", "moving"))),
    Api("nisa.nc_transpose", "tensor", one_pass=True, params=(("data",), ("dst", "data"))),
    Api("nisa.reciprocal", "vector"),
    Api("nisa.scalar_tensor_tensor", "vector"),
    Api("nisa.select", "vector", legacy=False, one_pass=True),
    Api("nisa.tensor_copy", "vector", one_pass=True, params=(("src",), ("dst", "src"))),
    Api("nisa.tensor_partition_reduce", "vector"),
    Api("nisa.tensor_reduce", "vector", one_pass=True, params=(("op", "data", "axis"), ("dst", "op", "data", "axis"))),
    Api("nisa.tensor_scalar", "vector", one_pass=True,
        params=(("data", "op0", "operand0"), ("dst", "data", "op0", "operand0"))),
    Api("nisa.tensor_scalar_reduce", "vector"),
    Api("nisa.tensor_tensor", "vector", params=(("data1", "data2", "op"), ("dst", "data1", "data2", "op"))),
    Api("nisa.tensor_tensor_scan", "vector", sim="partial"),
    Api("nisa.nc_find_index8", "vector", legacy=False),
    Api("nisa.nonzero_with_count", "gpsimd", legacy=False),
    Api("nisa.register_alloc", None, legacy=False),
    Api("nisa.register_move", None, legacy=False),
    Api("nisa.register_load", None, legacy=False),
    Api("nisa.register_store", "gpsimd", legacy=False),
    Api("nl.while_loop", None),
    Api("nl.shared_identity_matrix", None, kind="alloc"),
    # documented NKI the built-in simulator does not model
    Api("nisa.activate2", None, sim="none"),
    Api("nisa.topk", None, sim="none"),
    Api("nisa.nc_matmul_mx", None, sim="none"),
    Api("nisa.quantize_mx", None, sim="none"),
    Api("nisa.tensor_scalar_cumulative", None, sim="none"),
    Api("nisa.range_select", None, sim="none"),
    Api("nisa.select_reduce", None, sim="none"),
    Api("nisa.local_gather", None, sim="none"),
    Api("nisa.nc_n_gather", None, sim="none"),
    Api("nisa.nc_stream_shuffle", "vector", sim="partial"),  # the legacy value-returning form stops (SIM117)
    Api("nisa.nc_match_replace8", "vector", sim="partial"),  # the legacy value-returning form stops (SIM117)
    Api("nisa.rng", None, sim="none"),
    Api("nisa.rand2", None, sim="none"),
    Api("nisa.sendrecv", None, sim="none"),
    Api("nisa.core_barrier", None, legacy=False, sim="partial"),  # one program: no-op; a grid: SIM117
    Api("nisa.scalar_load", None, sim="none"),
    Api("nisa.sparse_matmul", None, sim="none"),
    Api("nl.random_seed", None, kind="call", sim="none"),
    Api("nl.static_cast", None, kind="call", sim="none"),
    Api("nl.TileIndex", None, kind="call", sim="none"),
    Api("nl.local_tile", None, kind="call", sim="none"),
    Api("nl.float8_e5m2_x4", None, kind="dtype", sim="none"),
    Api("nl.float8_e4m3fn_x4", None, kind="dtype", sim="none"),
    Api("nl.float4_e2m1fn_x4", None, kind="dtype", sim="none"),
    Api("tensor.ap", None, kind="method", sim="partial"),  # .ap(dtype=...) reinterpretation stops
    Api("tensor.view", None, kind="method", sim="none"),
    Api("tensor.indirect", None, kind="method", sim="none"),
    Api("nki.collectives.nccl", None, kind="collective", sim="none"),
    Api("nki.collectives.collectives", None, kind="collective", sim="none"),
    Api("nki.collectives.all_reduce", None, kind="collective", sim="none"),
    Api("nki.collectives.all_gather", None, kind="collective", sim="none"),
    Api("nki.collectives.reduce_scatter", None, kind="collective", sim="none"),
    Api("nki.collectives.collective_permute", None, kind="collective", sim="none"),
    Api("nki.collectives.collective_permute_implicit", None, kind="collective", sim="none"),
)
BY_NAME = {a.name: a for a in CATALOGUE}


def documented(name: str, version: str | None = None) -> bool:
    """Whether the versioned API table says `name` exists (present or deprecated) at NKI `version`."""
    return table.status(name, version) in ("present", "deprecated")


def roles() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The parser's argument roles: API -> (legacy positional parameters, new positional parameters)."""
    return {a.name: a.params for a in CATALOGUE if a.params is not None}


def simulator_limits() -> frozenset[str]:
    """Short names of documented APIs on which the simulator may stop (not modelled, or not every variant)."""
    return frozenset(a.short for a in CATALOGUE if a.sim != "full")


def one_pass_ops() -> frozenset[str]:
    """Short names of the ops whose VectorE cost is one pass over the input (~N elements)."""
    return frozenset(a.short for a in CATALOGUE if a.one_pass)
