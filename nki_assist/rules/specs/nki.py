"""Static NKI rules (checks in rules/nki_*.py).

Id ranges: NKI0xx front end, NKI1xx memory hierarchy, NKI2xx migration correctness,
NKI3xx hardware utilisation, NKI4xx numerical accuracy, NKI5xx dialect / API version.
"""

from ...findings import Severity
from ..registry import RuleSpec

E, W, I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES = [
    RuleSpec("NKI001", "nki-syntax-error", "unsupported-construct", E,
             "Part of the file cannot be parsed (or a check could not analyse it); facts there are missing.",
             fix="Fix the syntax error; the checks skip the code that does not parse."),
    # memory hierarchy
    RuleSpec("NKI101", "partition-dim-exceeds-limit", "partition-limit", E,
             "An SBUF/PSUM tile puts more than 128 rows on the partition axis.",
             fix="Tile the partition axis into blocks of nl.tile_size.pmax (128) rows."),
    RuleSpec("NKI102", "sbuf-over-budget", "sbuf-budget", E,
             "Simultaneously live SBUF tiles (block dims included) exceed the target's bytes per partition.",
             fix="Shrink the block dims or free sizes, or allocate tiles inside the loop that uses them."),
    RuleSpec("NKI103", "psum-tile-exceeds-bank", "psum-bank-overflow", E,
             "A PSUM tile needs more than one 2 KiB bank per partition (more than 512 fp32).",
             fix="Split the free dimension into 512-wide fp32 blocks, one PSUM bank each."),
    RuleSpec("NKI104", "too-many-psum-banks", "psum-bank-overflow", E,
             "PSUM tiles live at the same time need more than the 8 banks a partition has.",
             fix="Evict PSUM results to SBUF sooner, or allocate fewer accumulators per loop scope."),
    RuleSpec("NKI105", "matmul-tile-limit", "matmul-tile-limit", E,
             "A matmul's contraction, stationary free or moving free size exceeds the TensorE limits.",
             fix="Tile K and M to 128 and the moving free size to 512 (gemm_moving_fmax)."),
    RuleSpec("NKI106", "matmul-operand-placement", "buffer-placement", E,
             "A matmul reads an operand from HBM or PSUM, or writes its result outside PSUM.",
             fix="Load operands into SBUF with nl.load / nisa.dma_copy and give the matmul a PSUM destination."),
    RuleSpec("NKI107", "dma-from-psum", "buffer-placement", E,
             "New NKI: a DMA or nl.store reads directly from a PSUM tile, which 0.3+ rejects.",
             fix="Copy the PSUM tile to SBUF with nisa.tensor_copy (or nl.copy) and store from SBUF."),
    RuleSpec("NKI108", "small-dma-in-loop", "small-dma", W,
             "A DMA inside a loop moves under 2 KiB per partition or uses fewer than 128 partitions.",
             fix="Move bigger tiles per transfer: 128 partitions and at least 2 KiB (ideally 4 KiB+) each."),
    RuleSpec("NKI109", "loop-invariant-load", "redundant-dma", W,
             "A load inside a loop reads the same HBM region on every iteration of the innermost loop.",
             fix="Hoist the load out of the loop (or up to the loop whose variable it depends on)."),
    RuleSpec("NKI110", "kernel-output-not-shared-hbm", "buffer-placement", E,
             "A kernel returns a tensor that is not in HBM (shared_hbm in new NKI).",
             fix="Allocate the output with nl.ndarray(shape, dtype, buffer=nl.shared_hbm) and store into it."),
    RuleSpec("NKI111", "sliding-window-reloaded", "redundant-dma", I,
             "A load steps its offset by less than its extent over a loop that selects no output element (the "
             "taps of a convolution or stencil): correct overlapping windows, each reloaded from HBM.",
             fix="Load one halo tile (window extent plus the taps' total shift) per output tile and give each tap "
                 "a shifted SBUF slice of it."),
    # migration correctness
    RuleSpec("NKI201", "affine-range-carried-dependency", "loop-carried-dependency", E,
             "Legacy NKI: an nl.affine_range iteration reads a tensor an earlier iteration wrote "
             "(other than `psum += matmul`).",
             fix="Use nl.sequential_range for the loop, or accumulate in PSUM with `acc += nl.matmul(...)`."),
    RuleSpec("NKI202", "unused-kernel-input", "unused-input", W,
             "A kernel parameter is never read.",
             fix="Use the input (a missing epilogue such as bias?) or remove it from the signature."),
    RuleSpec("NKI203", "floor-div-trip-count-unguarded", "missing-boundary-mask", W,
             "A loop runs `N // T` iterations with no assert that T divides N and no mask or clamp for the tail.",
             fix="Add `assert N % T == 0`, or iterate ceil(N / T) tiles and clamp the last one (min()/mask=)."),
    RuleSpec("NKI207", "tail-tile-offset", "indexing-error", E,
             "A floored main loop is completed by a partial tile after it, but that tile starts at a different "
             "offset than where the loop stopped (e.g. R // 128 instead of (R // 128) * 128).",
             fix="Start the partial tile at tile * (N // tile) (= N - N % tile), the first row the loop did not cover."),
    RuleSpec("NKI206", "shape-special-cased", "output-mismatch", E,
             "The kernel computes only when a shape equals literal values (`if R == 256 and D == 1024`) and "
             "otherwise returns an input or writes no output.",
             fix="Compute for any shape (tile loops over the symbolic sizes, masked/clamped tail), or assert the "
                 "supported shapes so other shapes fail loudly."),
    # hardware utilization
    RuleSpec("NKI301", "small-matmul-tile", "tensor-engine-underutilized", W,
             "A matmul contracts over (K) or produces (M) fewer than 128 rows, idling most of the 128x128 array.",
             fix="Grow K and M tiles to 128 (pack several small problems along the partition axis)."),
    RuleSpec("NKI303", "row-tile-below-128-partitions", "partition-underutilized", W,
             "A loop walks the rows of the data in blocks of fewer than 128, so every instruction and DMA on "
             "those tiles uses only that many of the 128 partitions (lanes).",
             fix="Tile 128 rows per iteration (nl.tile_size.pmax) and handle the ragged tail; a row count "
                 "copied from a CUDA block shape does not carry over."),
    RuleSpec("NKI302", "fp32-matmul-operands", "fp32-matmul", W,
             "Matmul operands are float32, which runs the Tensor Engine at a quarter of the bf16 rate.",
             fix="Cast operands to bfloat16 on load; PSUM still accumulates in fp32."),
    # numerical accuracy
    RuleSpec("NKI401", "low-precision-sbuf-accumulator", "low-precision-accumulation", W,
             "A bf16/fp16/fp8 SBUF tile accumulates a sum across loop iterations.",
             fix="Accumulate in a float32 tile (or in PSUM) and cast once after the loop."),
    RuleSpec("NKI402", "exp-without-max-subtraction", "overflow-risk", W,
             "exp() of data with no preceding max reduction: large inputs overflow to inf.",
             fix="Subtract the row max first: exp(x - max(x)) (e.g. activation(exp, x, bias=-max))."),
    RuleSpec("NKI403", "variance-cancellation", "catastrophic-cancellation", W,
             "Variance computed as E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std (bf16 and fp32).",
             fix="Use nisa.bn_stats/bn_aggr, or subtract the mean first and average (x - mean)^2 in fp32."),
    RuleSpec("NKI404", "activation-valid-range", "activation-approximation", W,
             "A ScalarE activation with a documented valid input range (sin, arctan, log, sqrt, rsqrt, "
             "reciprocal) gets input that is not range-reduced or guarded.",
             fix="Range-reduce or clamp the input first, or use the nl.* form that range-reduces (nl.sin)."),
    RuleSpec("NKI405", "fp8-variant-unsupported", "fp8-range", E,
             "float8_e4m3fn (OCP, max 448) is used on a target whose TensorE supports only float8_e4m3 (max 240).",
             fix="Use nl.float8_e4m3 with a scale that keeps values within 240, or target trn3."),
    # dialect / API version
    RuleSpec("NKI501", "removed-api-in-new-nki", "deprecated-api", E,
             "New-dialect file uses an API removed or renamed after NKI 0.1 (mask=, nl.arange, psum_fmax, ...).",
             fix="Use the replacement named in the message (see the NKI migration guide)."),
    RuleSpec("NKI502", "deprecated-loop-iterator", "deprecated-api", I,
             "New NKI: nl.affine_range / sequential_range / static_range are deprecated aliases of range.",
             fix="Write `for i in range(n)` (or nl.fori_loop for a runtime loop)."),
    RuleSpec("NKI503", "new-api-in-legacy-nki", "deprecated-api", E,
             "Legacy (neuronxcc.nki) file uses an API that only exists in new NKI (fori_loop, dma_compute, ...).",
             fix="Port the file to `import nki` or use the legacy equivalent named in the message."),
    RuleSpec("NKI504", "mixed-nki-namespaces", "deprecated-api", E,
             "The file imports both neuronxcc.nki and nki; NKI 0.4+ rejects neuronxcc.nki inside kernels.",
             fix="Import only `nki` (nki.language, nki.isa) and port the legacy calls."),
    RuleSpec("NKI505", "block-dimension-in-new-nki", "deprecated-api", E,
             "New NKI: a tile has dimensions before its partition dim (block dims), removed in NKI 0.2.",
             fix="Make the partition dim leftmost and keep a Python list of tiles instead of block dims."),
]
