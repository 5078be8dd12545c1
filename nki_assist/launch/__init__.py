"""`nki-assist run -- CMD`: a program's own kernel launches executed on the instrumented simulator.

Parts:
  site       the generated folder on PYTHONPATH whose `sitecustomize.py` arms every Python process the
             program starts (pytest-xdist workers and subprocesses included)
  hook       the import hook that answers `neuronxcc.nki` / `nki` with the simulator's modules, whose
             launch APIs (`jit`, `baremetal`, `benchmark`, `simulate_kernel`, `simulate`) become `Launcher`s
  execute    one launch: the simulator on the program's real arguments, its results handed back, a record
  record     the launch record (one JSON line per launch, appended by every process to one file)
  collect    launches -> findings deduplicated across launches, the per-kernel table
  spec_writer  `--save-spec`: a port spec per kernel and shape family
  program    the task the sandboxed child runs: the command, its output streamed to files
"""

from __future__ import annotations

RECORD_ENV = "NKI_ASSIST_RUN_RECORD"  # the JSON-lines file every process appends its launches to
TARGET_ENV = "NKI_ASSIST_RUN_TARGET"
OPTIONS_ENV = "NKI_ASSIST_RUN_OPTIONS"  # JSON: precise, lenient, ...
