"""`nki-assist run [options] -- CMD ARGS...`: run a program's own tests or scripts with every kernel launch on
the instrumented simulator, and report what the simulator found, as `check` reports."""

from __future__ import annotations

import argparse
import codecs
import json
import os
import sys
import tempfile
import threading

from .common import add_fail_on, add_format, add_limits, add_sandbox, add_target, apply_sandbox, check_output, exit_code
from .exits import EXIT_FINDINGS, UsageError

DESCRIPTION = (
    "Run CMD (`python script.py`, `pytest tests/`, any Python entry point) in the sandbox with the simulator's "
    "`neuronxcc.nki` and `nki` modules installed in every Python process it starts (pytest-xdist workers and "
    "subprocesses included): each kernel launch (`nki.baremetal(k)(...)`, `nki.simulate_kernel`, "
    "`nki.benchmark`, `@nki.jit` kernels called on NumPy arrays, `nki.simulate(k)(...)`) runs on the simulator "
    "with the program's real arguments. The program's output and exit status are kept; the simulator's findings "
    "are deduplicated across launches, placed at the kernel line and printed as `check` prints them. A launch "
    "the simulator cannot run is a tool limit (pytest reports a skip), never a defect of the kernel. "
    "`python`/`python3` as CMD means the interpreter nki-assist runs on. Exit 1 when the program failed or a "
    "finding reaches --fail-on."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_format(p, ["text", "concise", "json", "sarif", "github"], "text")
    add_fail_on(p)
    p.add_argument("--backend", choices=["builtin", "neuron"], default="builtin",
                   help="builtin simulator (default), or neuron: keep the real Neuron SDK (it must be importable)")
    add_limits(p, timeout_s=600.0, timeout_what="for the whole program", memory_what="each process of the program")
    p.add_argument("--fp32", action="store_true", help="keep all simulator storage in fp32")
    p.add_argument("--save-spec", metavar="DIR",
                   help="write a port spec per kernel and shape family observed into DIR (for `review`)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    add_target(p)
    add_sandbox(p)
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the program to run, after `--`")


class _Tail(threading.Thread):
    """Copies the program's output files to our streams while it runs."""

    def __init__(self, pairs):
        super().__init__(daemon=True)
        self.pairs = pairs  # (path, stream)
        self.done = threading.Event()
        self.pos = [0] * len(pairs)
        # a character split across two reads (the course harness prints emoji) is decoded whole
        self.decoders = [codecs.getincrementaldecoder("utf-8")(errors="replace") for _ in pairs]

    def pump(self) -> None:
        for i, (path, stream) in enumerate(self.pairs):
            try:
                with open(path, "rb") as fh:
                    fh.seek(self.pos[i])
                    data = fh.read()
            except OSError:
                continue
            if data:
                self.pos[i] += len(data)
                stream.write(self.decoders[i].decode(data))
                stream.flush()

    def run(self) -> None:
        while not self.done.wait(0.2):
            self.pump()
        self.pump()


def _command(args) -> list[str]:
    cmd = list(args.cmd or [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise UsageError("give the program to run after `--`: nki-assist run -- python test.py")
    return cmd


def _sdk_importable() -> bool:
    import importlib.util  # deferred: a command imports what it needs only when it runs (CLI start-up time)

    return any(importlib.util.find_spec(n) is not None for n in ("neuronxcc", "nki"))


def _program_note(outcome, cmd: list[str]) -> tuple[bool, str]:
    """(failed, a note) from the sandbox outcome."""
    shown = " ".join(cmd)
    if outcome.status == "ok" and isinstance(outcome.value, dict):
        code = outcome.value.get("returncode")
        if outcome.value.get("error"):
            return True, f"program `{shown}`: {outcome.value['error']}"
        return code != 0, f"program `{shown}` exited with status {code}"
    what = {"timeout": "was stopped at the wall-time limit",
            "out-of-memory": "ran out of memory"}.get(outcome.status, "ended abnormally")
    return True, f"program `{shown}` {what}: {outcome.error}"


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..api.hardware import DEFAULT_TARGET
    from ..launch import OPTIONS_ENV, RECORD_ENV, TARGET_ENV
    from ..launch.site import pythonpath, write_site
    from ..toolchain.sandbox import run_in_child

    cmd = _command(args)
    check_output(args.output)
    if args.timeout <= 0 or args.memory_mb <= 0:
        raise UsageError("--timeout and --memory-mb must be positive")
    if args.backend == "neuron" and not _sdk_importable():
        raise UsageError("--backend neuron: the Neuron SDK (neuronxcc or nki) is not importable here; "
                         "leave --backend out to run on the simulator")
    apply_sandbox(args)
    target = args.target or DEFAULT_TARGET
    cwd = os.getcwd()
    report_to_stdout = not args.output
    human = args.format in ("text", "concise")
    prog_out = sys.stdout if (human or not report_to_stdout) else sys.stderr
    with tempfile.TemporaryDirectory(prefix="nki-assist-run-") as tmp:
        record = os.path.join(tmp, "launches.jsonl")
        env = {"PYTHONUNBUFFERED": "1",
               "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
        if args.backend == "builtin":
            site = write_site(os.path.join(tmp, "site"))
            env.update({"PYTHONPATH": pythonpath(site, os.environ.get("PYTHONPATH")), RECORD_ENV: record,
                        TARGET_ENV: target, OPTIONS_ENV: json.dumps({"precise": not args.fp32})})
        elif os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        tail = _Tail([(out_path, prog_out), (err_path, sys.stderr)])
        tail.start()
        try:
            outcome = run_in_child("nki_assist.launch.program:run_program",
                                   {"argv": cmd, "cwd": cwd, "python": sys.executable, "stdout_path": out_path,
                                    "stderr_path": err_path},
                                   timeout_s=args.timeout, memory_mb=args.memory_mb, env=env, nproc_margin=1024)
        finally:
            tail.done.set()
            tail.join()
        failed, note = _program_note(outcome, cmd)
        from ..launch.report import build_report, render_run  # deferred: check's report and renderers

        result = build_report(record, cwd, target, note, stopped=outcome.status != "ok", backend=args.backend)
    text = render_run(result, args.format)
    if args.output:
        from .common import write_atomic  # deferred: only with --output

        write_atomic(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if human:
        print(result.table, file=sys.stderr)
        for n in result.report.notes:
            print(f"note: {n}", file=sys.stderr)
    if args.save_spec:
        from ..launch.spec_writer import save_specs  # deferred: only with --save-spec

        for path in save_specs(result.launches, result.comparisons, args.save_spec, target):
            print(f"wrote {path}", file=sys.stderr)
    code = exit_code(result.report.findings, args.fail_on)
    return max(code, EXIT_FINDINGS) if failed else code
