"""Backend-level outcomes of running a port: limits hit, crashes, cross-checks, reference problems."""

from ...findings import Severity
from ..registry import RuleSpec

RULES = [
    RuleSpec(
        id="TC101",
        name="kernel-timeout",
        category="unsupported-construct",
        severity=Severity.ERROR,
        summary="The kernel did not finish within the simulation wall-time limit (endless or data-dependent loop).",
        source="toolchain",
        fix="Make every loop bound a compile-time value derived from the input shapes; raise --timeout if the "
            "size is simply large.",
        doc="""\
## What it finds
A kernel run (built-in simulator or `nki.simulate`) that did not finish within the wall-time limit
(`--timeout`, default 60 s). The simulation runs in a child process; a watchdog dumps the Python
stack when the limit passes, and the finding points at the kernel line that was executing then.

## Why it matters on Trainium
NKI loops are unrolled at compile time (new dialect) or traced once (legacy): every trip count must
follow from the input shapes. A loop that never ends in simulation is a `while` on a runtime value,
a loop variable that is never advanced, or a trip count computed from data — none of which the NKI
compiler accepts, and which would hang or fail to compile on the device.

## Example
```python
i = 0
while i < n_tiles:          # TC101 here: i is never advanced
    nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
```

## Fix
Loop with `nl.affine_range`/`range` over a count derived from `a.shape`; for a runtime bound use
`nl.fori_loop`. If the size is simply large, raise `--timeout` or simulate a smaller size.
""",
    ),
    RuleSpec(
        id="TC102",
        name="kernel-out-of-memory",
        category="unsupported-construct",
        severity=Severity.ERROR,
        summary="Running the kernel allocated more host memory than the simulation limit (a tensor far "
                "larger than the inputs).",
        source="toolchain",
        fix="Check the shapes passed to nl.ndarray/nl.zeros: allocate per tile, not per whole problem; "
            "raise --memory-mb only if the problem size really needs it.",
        doc="""\
## What it finds
A kernel run that needed more host memory than the simulation limit (`--memory-mb`, default
4096 MiB; enforced with `RLIMIT_AS` in the child process). The finding names the kernel line whose
allocation failed.

## Why it matters on Trainium
The simulator holds every tensor the kernel creates. Needing gigabytes for inputs of a few megabytes
means a tensor sized by the whole problem (or by a wrong product of dimensions) instead of by a tile:
on the device such a tensor does not fit SBUF (24-32 MiB per core) and the compiler rejects or spills it.

## Example
```python
acc = nl.ndarray((128, M * N * K), dtype=nl.float32, buffer=nl.shared_hbm)   # TC102
```

## Fix
Allocate per tile (`(128, 512)` PSUM, `(128, TILE_N)` SBUF) inside the loop; check the shape
arithmetic. Raise `--memory-mb` only when the problem size really needs it.
""",
    ),
    RuleSpec(
        id="TC103",
        name="backend-crash",
        category="toolchain-failure",
        severity=Severity.WARNING,
        summary="The simulation backend itself failed (crash, signal, unreadable result); the kernel "
                "was not judged.",
        source="toolchain",
        fix="Re-run with --debug and report the message; the other checks still ran.",
        doc="""\
## What it finds
The simulation backend itself failed: the child process died from a signal (segfault, abort, the
system's out-of-memory killer), exited without a result, returned something that is not a result,
or could not start. The kernel was not judged for that size; other checks still ran.

## Why it matters on Trainium
Without a run there are no outputs to compare and no trace for the cost model, so numerical and
performance findings for that size are missing. The review says so instead of staying silent.

## Example
```text
TC103 backend-crash  gemm_nki.py:12  The builtin backend failed: child process killed by SIGSEGV
```

## Fix
Re-run with `--debug`; the evidence holds the tail of the child's stderr (with the faulthandler
stack). If the simulator is at fault, report it with the kernel; try `--backend neuron` when the
real toolchain is installed.
""",
    ),
    RuleSpec(
        id="TC104",
        name="backend-mismatch",
        category="output-mismatch",
        severity=Severity.WARNING,
        summary="The real Neuron simulator and the built-in simulator disagree on the kernel's outputs.",
        source="toolchain",
        fix="Compare the worst element's inputs by hand; if nki.simulate is right, report the built-in "
            "simulator gap, otherwise the real toolchain's.",
        doc="""\
## What it finds
With `--backend neuron`, the real Neuron simulator (`nki.simulate` / `simulate_kernel`) and the
built-in simulator ran the same kernel on the same inputs and disagree beyond a few units of the
output dtype (fp32: rtol 1e-4; bf16: rtol 2e-2, atol 1e-2). Evidence: mismatch count, max abs
error, worst element and both values.

## Why it matters on Trainium
Both simulators claim to model the same ISA semantics (fp32 engine math, RNE stores, fp32 PSUM
accumulation). A disagreement means one of them models an instruction differently — exactly the
case where "passes in simulation, fails on hardware" starts, so neither result should be trusted
until it is explained.

## Example
```text
TC104  Output 0: nki.simulate and the builtin simulator differ in 1 of 256 elements
       (max abs 0.5, worst at [0, 0]: neuron 1.5 vs builtin 1.0).
```

## Fix
Inspect the instruction that writes the worst element; compare its semantics in nki-facts and the
ISA docs. Report the gap to whichever simulator is wrong.
""",
    ),
    RuleSpec(
        id="TC105",
        name="reference-failed",
        category="toolchain-failure",
        severity=Severity.WARNING,
        summary="The NumPy reference raised, timed out, returned the wrong number of outputs or NaN/Inf.",
        source="toolchain",
        fix="Fix reference.py so it returns the kernel's outputs (same count, shape and order) for every size.",
        doc="""\
## What it finds
The NumPy reference named in the port spec (`reference = "file.py:function"`) raised, ran past the
time limit, returned something that is not numeric arrays, returned a different number of outputs
than the kernel, or produced NaN/Inf. It runs in a child process, in float64, on the same
dtype-rounded inputs the kernel sees.

## Why it matters on Trainium
Every numerical verdict compares the kernel with this reference. A broken reference makes a correct
port look wrong (or a wrong one unjudgeable); NaN in the reference hides exactly the elements where
an overflow in the port would show.

## Example
```python
def gemm_ref(lhsT, rhs, bias):
    return lhsT @ rhs + bias       # TC105: lhsT is [K, M]; needs lhsT.T @ rhs
```

## Fix
Make the reference return the kernel's outputs (same count, order and shape) for every size in the
spec, computed from the same positional arguments.
""",
    ),
    RuleSpec(
        id="TC106",
        name="kernel-exception",
        category="output-mismatch",
        severity=Severity.ERROR,
        summary="The kernel raised an exception for this size, so it produced no output.",
        source="toolchain",
        fix="Read the exception at the reported line: an assert on the shape means the size is not "
            "supported (handle the tail), an IndexError means an off-by-one tile bound.",
        doc="""\
## What it finds
The kernel raised an exception while running for one size (an `assert` on a shape, an
`IndexError`, a `TypeError` from a wrong argument), so it produced no output. The finding points at
the innermost kernel line in the traceback.

## Why it matters on Trainium
A port has to handle every shape the CUDA kernel handles. An assertion that the dimension is a
multiple of the tile size is a stated limitation; a crash on a ragged size is a missing tail.
Either way, callers that pass such shapes get a compile error or no result.

## Example
```python
assert N % 512 == 0        # TC106 for size N=700
```

## Fix
Handle the tail (clamped slices in NKI 0.2+, `mask=` in the legacy dialect), or document the
supported shapes and drop the unsupported size from the spec.
""",
    ),
    RuleSpec(
        id="TC107",
        name="output-out-of-tolerance",
        category="output-mismatch",
        severity=Severity.ERROR,
        summary="A kernel output differs from the reference beyond the spec's rtol/atol, or has a "
                "different shape.",
        source="toolchain",
        fix="Look at the worst element and the sizes that fail; `nki-assist review` attributes the cause.",
        doc="""\
## What it finds
A kernel output differs from the reference for one size: some elements are outside
`atol + rtol * |reference|` from the spec's `[tolerance]`, or the output shape differs. The evidence
holds max abs and rel error, error in ULPs of the output dtype, the mismatch fraction, NaN/Inf
counts and the worst element with both values.

## Why it matters on Trainium
This is the bottom line of a port: the kernel does not compute what the reference computes. Which
sizes fail, and whether the error is a few ULPs or whole elements, points at the cause: a ragged
tail (only the ragged size fails, mismatch fraction = tail share), precision (error grows with the
reduction length) or an algorithm bug (every size fails).

## Example
```text
TC107  Output 0 differs from the reference for size 'ragged': 768 of 89,600 elements (0.86%)
       outside rtol=0.02, atol=0.01; worst at [0, 512] (kernel nan, reference 3.2).
```

## Fix
Look at the worst element and the sizes that fail; `nki-assist review` attributes the cause
across precision scenarios.
""",
    ),
    RuleSpec(
        id="TC108",
        name="neuron-toolchain-error",
        category="unsupported-construct",
        severity=Severity.ERROR,
        summary="The real Neuron toolchain (nki.simulate / simulate_kernel) rejected or failed the kernel.",
        source="toolchain",
        fix="Read the toolchain's message at the reported line; the built-in simulator's findings on the "
            "same line usually name the limit.",
        doc="""\
## What it finds
With `--backend neuron`, the real Neuron toolchain rejected or failed the kernel: a compile-time
check of `nki.simulate`/`simulate_kernel` (e.g. `err_num_partition_exceed_arch_limit`), a traced
`SyntaxError`, or an exception inside the toolchain. Known error names are mapped to taxonomy
categories (partition-limit, matmul-tile-limit, buffer-placement, loop-carried-dependency, ...).

## Why it matters on Trainium
These are the messages the real compiler gives; a kernel that fails here will not build for the
device, whatever the built-in simulator says.

## Example
```text
TC108  kernel.py:9  The Neuron toolchain rejected the kernel: SyntaxError: Size of partition
       dimension 256 exceeds architecture limitation of 128.
```

## Fix
Read the toolchain's message at the reported line; the built-in simulator's findings on the same
line usually name the limit and the fix.
""",
    ),
    RuleSpec(
        id="TC109",
        name="size-too-large",
        category="toolchain-failure",
        severity=Severity.WARNING,
        summary="A size's inputs would not fit the simulation memory limit, so that size was skipped.",
        source="toolchain",
        fix="Use a smaller size for simulation, or raise --memory-mb.",
        doc="""\
## What it finds
A size in the port spec whose inputs alone (generated in float64) would exceed the simulation
memory limit, so it was skipped instead of exhausting the machine.

## Why it matters on Trainium
Production shapes are often too large to simulate on a CPU; skipping them silently would make a
review look complete when a size was never run.

## Example
```toml
[[sizes]]
name = "prod"
M = 65536
K = 65536
N = 8192
```

## Fix
Simulate a representative smaller size (same tail behaviour: keep ragged remainders), or raise
`--memory-mb`.
""",
    ),
    RuleSpec(
        id="TC110",
        name="kernel-crash",
        category="output-mismatch",
        severity=Severity.ERROR,
        summary="The kernel's process ended without a result while the kernel ran (os._exit, a signal, "
                "a native crash, or it killed its supervisor), so nothing was checked for that size.",
        source="toolchain",
        fix="Remove process-level calls from the kernel (os._exit, sys.exit in threads, os.kill, ctypes); "
            "a kernel must return its outputs. The stderr tail in the evidence shows where it died.",
        doc="""\
## What it finds
The process running the kernel ended without returning a result after the kernel had started:
the kernel called `os._exit`, raised a fatal signal (a segfault through `ctypes`, `os.abort`,
`SIGXCPU` from the CPU-time limit, `SIGXFSZ` from the file-size limit), or killed the sandbox's
supervisor process. Nothing was compared for that size.

## Why it matters on Trainium
A kernel that ends its host process never hands outputs back: on a device it would take the
framework down with it. A review that ignored the crash would look like it had checked the size.
So a crash is an `error`, never a pass (a crash before the kernel started is TC103 instead).

## Example
```text
TC110 kernel-crash  gemm_nki.py:17  The kernel's process ended without a result: process exited with code 0 without a result (os._exit or a native exit)
```

## Fix
Return outputs from the kernel; remove `os._exit`, `sys.exit`, `os.kill` and native calls. The
evidence holds the stderr tail (with the faulthandler stack for signals) and the line when known.
""",
    ),
]
