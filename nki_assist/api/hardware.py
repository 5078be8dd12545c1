"""NeuronCore targets. Every number lives here once, with its public source.

Sources are the short names of ../shared/reference/nki-facts.md:
ARCH2/ARCH3/ARCH4 = NKI architecture guides for NeuronCore-v2 (trn1/inf2), v3 (trn2), v4 (trn3);
ISA = nki.isa docstrings; LISA = legacy nki.isa cost tables; DMA-BW = nki-dma-bandwidth-guide;
PERF = NKI performance guide; MLP-CONST = nki-library mlp_cte_constants.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KIB = 1024


@dataclass(frozen=True)
class Target:
    name: str  # trn1 | trn2 | trn3
    neuron_core: str  # NeuronCore-v2 / v3 / v4
    partitions: int  # SBUF & PSUM partitions (nl.tile_size.pmax) [ARCH2-4]
    sbuf_bytes_per_partition: int  # physical [ARCH2-4]
    sbuf_usable_bytes_per_partition: int  # minus compiler reserve [MLP-CONST]
    psum_bytes_per_partition: int  # [ARCH2-4]
    psum_banks: int  # [ARCH2; MIG]
    psum_bank_bytes: int  # 2 KiB = 512 fp32 [ARCH2; tiling-overview]
    stationary_fmax: int  # gemm_stationary_fmax [tiling-overview]
    moving_fmax: int  # gemm_moving_fmax for fp32 dst [tiling-overview; ISA nc_matmul]
    moving_fmax_bf16_dst: int  # v4 only accepts bf16 PSUM dst up to 8192 [ISA nc_matmul]
    contraction_max: int  # K on partitions [ISA nc_matmul]
    bn_stats_fmax: int  # [L tutorials/layernorm; ARCH2]
    matmul_dst_dtypes: tuple[str, ...]  # PSUM dst dtypes allowed [ISA nc_matmul]
    tensor_clock_hz: float  # [ARCH2-4]
    vector_clock_hz: float
    scalar_clock_hz: float
    gpsimd_clock_hz: float
    peak_bf16_flops: float  # dense per core [ARCH2-4]
    peak_fp8_flops: float
    peak_fp32_flops: float  # 1/4 rate [ARCH2-4]
    hbm_bw_bytes_per_s: float  # per physical core (derived from device BW / cores)
    dma_engines: int  # per core [ARCH2; dma-bandwidth-guide]
    dma_bw_per_engine_bytes_per_s: float  # nominal [nki-dma-overview]
    dma_sustained_bytes_per_s: float  # sustained per core [DMA-BW]
    dma_fixed_cost_s: float  # ~1.3 us trigger/semaphore latency per transfer [DMA-BW]
    dma_min_bytes_per_partition: int  # >= 2 KiB per partition minimum [DMA-BW; PERF #9]
    dma_good_bytes_per_partition: int  # >= 4 KiB saturates [DMA-BW]
    min_ii_cycles: int  # ~64 engine cycles per instruction [SHARED; LISA]
    mm_init_latency_cycles: int  # 64 [ARCH2]
    gpsimd_startup_cycles: int  # ~150 [LISA iota/affine_select]
    access_setup_cycles: int  # ~60-cycle fixed cost per tensor access request, documented for v2 only [ARCH2]
    vector_bf16_fast_mode: bool  # v3+ Vector perf mode 2-4x for bf16 [ARCH3]
    supports_fp8_e4m3fn: bool  # OCP e4m3fn on TensorE only v4 [ISA nc_matmul]
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    # the NKI version the code targets ("0.3"; None: api.version.DEFAULT_NKI_VERSION): which release's API
    # facts the version-dependent rules hold it to (api/version.py resolves it from settings and pins)
    nki_version: str | None = None

    @property
    def sbuf_bytes(self) -> int:
        return self.sbuf_bytes_per_partition * self.partitions

    @property
    def psum_bank_fp32(self) -> int:
        return self.psum_bank_bytes // 4

    @property
    def ridge_flops_per_byte(self) -> float:
        return self.peak_bf16_flops / self.hbm_bw_bytes_per_s


_SOURCES = {
    "partitions": "ARCH2-4; nki/get-started/about/tiling-overview.rst",
    "sbuf_bytes_per_partition": "ARCH2 (192 KiB), ARCH3 (224 KiB), ARCH4 (256 KiB, derived 32 MiB/128)",
    "sbuf_usable_bytes_per_partition": "nki-library core/mlp/mlp_cte/mlp_cte_constants.py: 224*1024-16384-8-256",
    "psum": "ARCH2-4: 2 MiB per core, 16 KiB per partition, 8 banks x 2 KiB",
    "matmul limits": "ISA nc_matmul; tiling-overview.rst (gemm_stationary_fmax=128, gemm_moving_fmax=512)",
    "clocks/peaks": "ARCH2-4 data-path tables",
    "hbm": "about-neuron trainium*.rst device BW divided by physical cores (derived)",
    "dma": "nki-dma-overview.rst (16 engines, per-engine BW); nki-dma-bandwidth-guide.rst (sustained, 2/4 KiB)",
    "min_ii": "nki.api.shared.rst; legacy nki.isa cost tables (MIN_II ~64 cycles)",
}

# Reserved SBUF per partition: dynamic-DMA scratch 16 KiB + 8 + 256 bytes [MLP-CONST].
_SBUF_RESERVED = 16384 + 8 + 256

TRN1 = Target(
    name="trn1",
    neuron_core="NeuronCore-v2",
    partitions=128,
    sbuf_bytes_per_partition=192 * KIB,
    sbuf_usable_bytes_per_partition=192 * KIB - _SBUF_RESERVED,
    psum_bytes_per_partition=16 * KIB,
    psum_banks=8,
    psum_bank_bytes=2 * KIB,
    stationary_fmax=128,
    moving_fmax=512,
    moving_fmax_bf16_dst=512,
    contraction_max=128,
    bn_stats_fmax=512,
    matmul_dst_dtypes=("float32",),
    tensor_clock_hz=2.8e9,
    vector_clock_hz=1.12e9,
    scalar_clock_hz=1.4e9,
    gpsimd_clock_hz=1.4e9,
    peak_bf16_flops=91.75e12,
    peak_fp8_flops=91.75e12,
    peak_fp32_flops=22.9e12,
    hbm_bw_bytes_per_s=410e9,
    dma_engines=16,
    dma_bw_per_engine_bytes_per_s=27.2e9,
    dma_sustained_bytes_per_s=272e9,
    dma_fixed_cost_s=1.3e-6,
    dma_min_bytes_per_partition=2 * KIB,
    dma_good_bytes_per_partition=4 * KIB,
    min_ii_cycles=64,
    mm_init_latency_cycles=64,
    gpsimd_startup_cycles=150,
    access_setup_cycles=60,
    vector_bf16_fast_mode=False,
    supports_fp8_e4m3fn=False,
    sources=_SOURCES,
)

TRN2 = Target(
    name="trn2",
    neuron_core="NeuronCore-v3",
    partitions=128,
    sbuf_bytes_per_partition=224 * KIB,
    sbuf_usable_bytes_per_partition=224 * KIB - _SBUF_RESERVED,
    psum_bytes_per_partition=16 * KIB,
    psum_banks=8,
    psum_bank_bytes=2 * KIB,
    stationary_fmax=128,
    moving_fmax=512,
    moving_fmax_bf16_dst=512,
    contraction_max=128,
    bn_stats_fmax=512,
    matmul_dst_dtypes=("float32",),
    tensor_clock_hz=2.4e9,
    vector_clock_hz=0.96e9,
    scalar_clock_hz=1.2e9,
    gpsimd_clock_hz=1.2e9,
    peak_bf16_flops=78.6e12,
    peak_fp8_flops=157.3e12,
    peak_fp32_flops=19.7e12,
    hbm_bw_bytes_per_s=362e9,
    dma_engines=16,
    dma_bw_per_engine_bytes_per_s=27.2e9,
    dma_sustained_bytes_per_s=368e9,
    dma_fixed_cost_s=1.3e-6,
    dma_min_bytes_per_partition=2 * KIB,
    dma_good_bytes_per_partition=4 * KIB,
    min_ii_cycles=64,
    mm_init_latency_cycles=64,
    gpsimd_startup_cycles=150,
    access_setup_cycles=0,
    vector_bf16_fast_mode=True,
    supports_fp8_e4m3fn=False,
    sources=_SOURCES,
)

TRN3 = Target(
    name="trn3",
    neuron_core="NeuronCore-v4",
    partitions=128,
    sbuf_bytes_per_partition=256 * KIB,
    sbuf_usable_bytes_per_partition=256 * KIB - _SBUF_RESERVED,
    psum_bytes_per_partition=16 * KIB,
    psum_banks=8,
    psum_bank_bytes=2 * KIB,
    stationary_fmax=128,
    moving_fmax=4096,
    moving_fmax_bf16_dst=8192,
    contraction_max=128,
    bn_stats_fmax=512,
    matmul_dst_dtypes=("float32", "bfloat16"),
    tensor_clock_hz=2.4e9,
    vector_clock_hz=1.2e9,
    scalar_clock_hz=1.2e9,
    gpsimd_clock_hz=1.2e9,
    peak_bf16_flops=78.6e12,
    peak_fp8_flops=78.6e12,  # plain (non-MX) FP8 at BF16 rate; MXFP8 315 TF is nc_matmul_mx only
    peak_fp32_flops=19.7e12,
    hbm_bw_bytes_per_s=612e9,
    dma_engines=16,
    dma_bw_per_engine_bytes_per_s=38.4e9,
    dma_sustained_bytes_per_s=528e9,
    dma_fixed_cost_s=1.3e-6,
    dma_min_bytes_per_partition=2 * KIB,
    dma_good_bytes_per_partition=4 * KIB,
    min_ii_cycles=64,
    mm_init_latency_cycles=64,
    gpsimd_startup_cycles=150,
    access_setup_cycles=0,
    vector_bf16_fast_mode=True,
    supports_fp8_e4m3fn=True,
    sources=_SOURCES,
)

TARGETS: dict[str, Target] = {t.name: t for t in (TRN1, TRN2, TRN3)}
DEFAULT_TARGET = "trn2"


def get_target(name: str | None) -> Target:
    if name is None:
        name = DEFAULT_TARGET
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; choose one of {', '.join(TARGETS)}") from None


# Storage sizes in bytes of the dtypes NKI knows (nki.api.shared.rst data types).
DTYPE_BYTES: dict[str, int] = {
    "float32": 4, "tfloat32": 4, "float32r": 4, "int32": 4, "uint32": 4,
    "bfloat16": 2, "float16": 2, "int16": 2, "uint16": 2,
    "float8_e4m3": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e8m0fnu": 1,
    "int8": 1, "uint8": 1, "bool_": 1, "bool": 1,
    "float8_e5m2_x4": 4, "float8_e4m3fn_x4": 4, "float4_e2m1fn_x4": 2,
}

LOW_PRECISION_FLOATS = frozenset({"bfloat16", "float16", "float8_e4m3", "float8_e4m3fn", "float8_e5m2"})

# Max finite values (nki-library core/utils/kernel_helpers.py _max_pos_range_map; OCP for e4m3fn).
FP8_MAX = {"float8_e4m3": 240.0, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}
# Largest finite value of every low-precision float NKI casts to (IEEE binary16; bfloat16 = fp32 range).
FLOAT_MAX = {**FP8_MAX, "float16": 65504.0, "bfloat16": 3.3895313892515355e38}
# ... and of the CUDA formats (cuda_fp8.h implements OCP FP8: E4M3 max 448, E5M2 max 57344; cuda_fp16.h,
# cuda_bf16.h). `__nv_fp8_*` constructors convert with __NV_SATFINITE: out-of-range values clamp to +-max.
CUDA_FLOAT_MAX = {"fp8_e4m3": 448.0, "fp8_e5m2": 57344.0, "half": 65504.0, "bfloat16": 3.3895313892515355e38}

# ScalarE activation valid input ranges (nki.api.shared.rst "Supported Activation Functions").
ACTIVATION_VALID_RANGE: dict[str, tuple[float, float]] = {
    "log": (2.0**-64, 2.0**64),
    "sin": (-3.141592653589793, 3.141592653589793),
    "arctan": (-1.5707963267948966, 1.5707963267948966),
    "sqrt": (2.0**-116, 2.0**118),
    "rsqrt": (2.0**-87, 2.0**97),
    "reciprocal": (2.0**-42, 2.0**42),  # magnitude range, both signs
}
