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
    ),
    RuleSpec(
        id="TC105",
        name="reference-failed",
        category="toolchain-failure",
        severity=Severity.WARNING,
        summary="The NumPy reference raised, timed out, returned the wrong number of outputs or NaN/Inf.",
        source="toolchain",
        fix="Fix reference.py so it returns the kernel's outputs (same count, shape and order) for every size.",
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
    ),
    RuleSpec(
        id="TC109",
        name="size-too-large",
        category="toolchain-failure",
        severity=Severity.WARNING,
        summary="A size's inputs would not fit the simulation memory limit, so that size was skipped.",
        source="toolchain",
        fix="Use a smaller size for simulation, or raise --memory-mb.",
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
    ),
]
