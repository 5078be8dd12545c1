"""Violations the built-in simulator finds while running a kernel (nki_assist.sim)."""

from ...findings import Severity
from ..registry import RuleSpec

_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO


def _sim(id, name, category, severity, summary, fix):
    return RuleSpec(id=id, name=name, category=category, severity=severity, summary=summary, source="simulation",
                    fix=fix)


RULES = [
    _sim("SIM101", "sim-partition-limit", "partition-limit", _E,
         "A tile allocated while running puts more than 128 rows on the partition axis.",
         "Tile the partition dimension in blocks of nl.tile_size.pmax (128) rows and loop over the blocks."),
    _sim("SIM102", "sim-psum-tile-exceeds-bank", "psum-bank-overflow", _E,
         "A PSUM tile needs more than one 2 KiB bank (512 fp32) per partition.",
         "Split the free dimension into 512-wide fp32 blocks, one PSUM bank each."),
    _sim("SIM103", "sim-psum-banks-exhausted", "psum-bank-overflow", _W,
         "More than the 8 PSUM banks per partition are live at the same time (the compiler must spill).",
         "Evict PSUM tiles to SBUF sooner, or allocate fewer accumulators inside the loop nest."),
    _sim("SIM104", "sim-sbuf-over-budget", "sbuf-budget", _E,
         "Live SBUF tiles exceed the usable SBUF bytes per partition of the target.",
         "Shrink or reuse tiles, move allocations into the loop body that uses them, or tile the free dimension."),
    _sim("SIM105", "sim-engine-tile-limit", "matmul-tile-limit", _E,
         "A matmul, transpose or bn_stats exceeds its engine's tile limits (K<=128, M<=128, N<=512, ...).",
         "Tile the operand the message names to the engine's limit and loop over the tiles (accumulating "
         "partial results where the operation reduces)."),
    _sim("SIM106", "sim-buffer-placement", "buffer-placement", _E,
         "An operand lives in the wrong memory (matmul from PSUM/HBM, load from SBUF, both inputs in PSUM, ...).",
         "Move the operand: matmul reads SBUF and writes PSUM, DMA moves HBM<->SBUF, evict PSUM with tensor_copy."),
    _sim("SIM107", "sim-invalid-dtype", "dtype-mismatch", _E,
         "A dtype the hardware rejects (matmul dst not fp32 on trn1/trn2, fp32 mixed with bf16 operands, ...).",
         "Use an fp32 PSUM destination for matmuls on trn1/trn2 and matching operand dtypes."),
    _sim("SIM108", "sim-out-of-bounds", "indexing-error", _E,
         "A load, store or tile access reaches outside the tensor and no mask excludes it.",
         "Clamp the tail tile (min(size, remaining)) or mask it (legacy mask=)."),
    _sim("SIM109", "sim-affine-write-conflict", "loop-carried-dependency", _E,
         "Different iterations of an nl.affine_range loop write the same elements.",
         "Use nl.sequential_range for the loop, or give each iteration its own output region."),
    _sim("SIM110", "sim-affine-carried-read", "loop-carried-dependency", _E,
         "An nl.affine_range iteration reads a value written by an earlier iteration.",
         "Declare the loop nl.sequential_range: its iterations then run in order, so each reads the value the "
         "previous one wrote."),
    _sim("SIM111", "sim-uninitialized-read", "uninitialized-read", _E,
         "An instruction reads tile or tensor elements that nothing has written.",
         "Initialise the tile (nl.zeros / memset) or only read the region that was written."),
    _sim("SIM112", "sim-output-not-written", "uninitialized-read", _E,
         "A kernel output is never written, or only partly (e.g. a ragged tail the loops skip).",
         "Cover the whole output: round the trip count up and mask or clamp the last tile."),
    _sim("SIM118", "sim-output-overwritten", "indexing-error", _W,
         "A store overwrites output elements that another store (or another iteration of the same store) "
         "already wrote, with different values, and nothing read them in between.",
         "Give every store its own region: step each offset by the extent the store writes, and check the "
         "offsets of the tail/epilogue stores."),
    _sim("SIM113", "sim-kernel-shape-error", "indexing-error", _E,
         "The kernel stopped on a shape, broadcast or index error while running.",
         "Make operand shapes agree (partition counts, free sizes, element counts of DMA copies)."),
    _sim("SIM114", "sim-kernel-raised", "unsupported-construct", _E,
         "The kernel raised an exception while running in the simulator.",
         "Fix the failing statement; the message names the exception and line."),
    _sim("SIM115", "sim-unsupported-api", "unsupported-construct", _W,
         "The kernel uses an API the built-in simulator (or the NKI compiler) does not support.",
         "Use a supported NKI API, or run the kernel with the neuron backend where the toolchain is installed."),
    _sim("SIM117", "sim-api-not-modelled", "toolchain-failure", _I,
         "The kernel calls a documented NKI API the built-in simulator does not model, so it was not run "
         "past that call (the API itself is valid NKI).",
         "Judge numerics and performance with the neuron backend (`--backend neuron`) where the toolchain "
         "is installed; the static and migration checks still apply."),
    _sim("SIM116", "sim-low-precision-accumulation", "low-precision-accumulation", _W,
         "A running sum is accumulated in a bf16/fp16/fp8 tile inside a loop.",
         "Accumulate in an fp32 tile and cast once at the end."),
]
