"""Cost-model (PERF1xx) and profile (PROF1xx) findings. Checks live in nki_assist/perf/."""

from ...findings import Severity
from ..registry import RuleSpec

RULES = [
    RuleSpec(
        id="PERF101", name="estimated-redundant-dma", category="redundant-dma", severity=Severity.WARNING,
        summary="The trace loads the same HBM bytes several times; the ratio of loaded to unique bytes is high.",
        fix="Hoist loads out of loops that do not index them, and block the free dimensions so each loaded tile "
            "is reused by several matmuls.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF102", name="dma-overhead-small-transfers", category="small-dma", severity=Severity.WARNING,
        summary="DMA transfers move less than ~2 KiB per descriptor, so fixed per-descriptor cost dominates.",
        fix="Load larger tiles: at least 2 KiB (ideally 4 KiB+) per partition per transfer, on all 128 partitions; "
            "coalesce adjacent loads into one.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF103", name="estimated-partition-underutilization", category="partition-underutilized",
        severity=Severity.WARNING,
        summary="Much engine time goes to instructions on few of the 128 partitions (lanes); fewer lanes cost the same.",
        fix="Put the parallel axis (rows, batch) on the partition dimension and process up to 128 rows per instruction.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF104", name="estimated-tensor-engine-underutilization", category="tensor-engine-underutilized",
        severity=Severity.WARNING,
        summary="Matmuls use a small part of the 128x128 PE array or a short moving side, wasting TensorE cycles.",
        fix="Contract over 128 partitions, use 128-wide stationary tiles and 512-wide moving tiles (one PSUM bank).",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF105", name="fp32-matmul-quarter-rate", category="fp32-matmul", severity=Severity.INFO,
        summary="Matmul operands are fp32, which runs at a quarter of the bf16/fp8 TensorE rate.",
        fix="Cast the operands to bfloat16 (or fp8) when loading; PSUM still accumulates in fp32.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF106", name="estimated-instruction-overhead", category="instruction-overhead",
        severity=Severity.WARNING,
        summary="Many instructions have a free size under 128 elements, so the fixed ~64-cycle cost dominates.",
        fix="Batch work into fewer, larger instructions (free size >= 128 per partition); fuse elementwise steps.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF107", name="estimated-transpose-overhead", category="transpose-overhead", severity=Severity.WARNING,
        summary="A large share of Tensor Engine time goes to transposes or broadcasts rather than useful matmuls.",
        fix="Choose layouts that need no transpose (swap stationary/moving, load lhsT directly) or hoist transposes "
            "out of the hot loop.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF108", name="estimated-engine-imbalance", category="engine-imbalance", severity=Severity.INFO,
        summary="One compute engine carries the kernel while another idles, with work that could move.",
        fix="Move copies/elementwise work to the idle engine (e.g. nisa.activation on ScalarE, tensor_copy on "
            "GpSimd) so engines overlap.",
        source="cost-model",
    ),
    RuleSpec(
        id="PERF109", name="estimated-dma-transpose-cost", category="dma-transpose", severity=Severity.WARNING,
        summary="Transposing DMAs (element-sized descriptors) take a large share of DMA time.",
        fix="Load in the natural layout and transpose on the Tensor Engine (nc_transpose), which is idle in "
            "memory-bound kernels.",
        source="cost-model",
    ),
    RuleSpec(
        id="PROF101", name="profile-spill-traffic", category="sbuf-budget", severity=Severity.WARNING,
        summary="Measured SBUF spill save/reload traffic is over 30% of all SBUF traffic.",
        fix="Shrink live tiles (smaller blocks, declare buffers inside the loop that uses them) or fuse ops so "
            "intermediates stay in SBUF.",
        source="profile",
    ),
    RuleSpec(
        id="PROF102", name="profile-transpose-flops", category="transpose-overhead", severity=Severity.WARNING,
        summary="Measured transpose FLOPs are over 10% of the Tensor Engine's FLOPs.",
        fix="Remove transposes from the hot loop: pick layouts that need none, or transpose once up front.",
        source="profile",
    ),
    RuleSpec(
        id="PROF103", name="profile-tensor-engine-throttling", category="tensor-engine-underutilized",
        severity=Severity.WARNING,
        summary="The profile shows Tensor Engine throttling (utilization dropped below ~50%, re-engaging the ramp).",
        fix="Keep TensorE at least 50% busy: overlap DMA with compute and avoid long matmul-free gaps.",
        source="profile",
    ),
    RuleSpec(
        id="PROF104", name="profile-low-nki-coverage", category="instruction-overhead", severity=Severity.INFO,
        summary="Less than half of the profiled device time is spent in NKI kernel instructions.",
        fix="Look at the compiler-generated work around the kernel (layout copies, casts) and fold it into the kernel.",
        source="profile",
    ),
]
