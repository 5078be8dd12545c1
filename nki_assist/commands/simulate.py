"""`nki-assist simulate PORT.toml`: run the port's kernel per size, compare with the reference."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .common import add_fail_on, add_format, add_limits, add_sandbox, add_target, apply_sandbox, exit_code
from .exits import UsageError

DESCRIPTION = ("Generate the port's inputs for each size, run the NKI kernel in a simulator (child process "
               "with time and memory limits), run the NumPy reference, and print agreement, violations, "
               "peak SBUF/PSUM and an instruction summary per engine.")
SCHEMA = "nki-assist/simulate@1"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="PORT.toml", help="port spec (design.md 'Port spec')")
    p.add_argument("--size", action="append", metavar="NAME", help="run only this size (repeatable; default: all)")
    add_format(p, ["text", "json"], "text")
    p.add_argument("--backend", choices=["builtin", "neuron"], default="builtin",
                   help="builtin simulator (default) or the real Neuron toolchain when installed")
    add_limits(p, timeout_s=60.0, timeout_what="per kernel or reference run", memory_what="the simulation process")
    p.add_argument("--fp32", action="store_true",
                   help="keep all storage in fp32 (separates algorithm bugs from rounding)")
    p.add_argument("--stochastic-rounding", action="store_true", help="round stores stochastically")
    add_sandbox(p)
    p.add_argument("--profile", metavar="SUMMARY.json",
                   help="neuron-profile / Neuron Explorer summary JSON: cost-model estimate vs measured, "
                        "plus profile-only findings")
    add_target(p)
    add_fail_on(p)


def _fmt_bytes(n: int) -> str:
    return f"{n:,} B"


def _size_json(sr, target) -> dict[str, Any]:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.portrun import engine_summary, peaks_summary

    run = sr.run
    ref = sr.reference
    return {
        "name": sr.size, "bindings": sr.bindings, "status": sr.status,
        "within_tolerance": sr.within_tolerance,
        "kernel_seconds": round(run.elapsed_s, 4) if run else None,
        "error": run.error if run else None, "error_line": run.error_line if run else None,
        "reference": None if ref is None else {"status": ref.status, "error": ref.error,
                                               "seconds": round(ref.elapsed_s, 4)},
        "agreement": [a.to_json() for a in sr.agreement],
        "golden": [a.to_json() for a in sr.golden],
        "golden_source": sr.golden_label, "golden_not_compared": sr.golden_not_compared,
        "peaks": peaks_summary(run.peaks, target) if run and run.status == "ok" else None,
        "engines": engine_summary(run.trace) if run else {},
        "instructions": len(run.trace) if run else 0,
        "findings": [f.to_json() for f in sr.findings],
        "notes": sr.notes,
        "seconds": round(sr.elapsed_s, 4),
    }


def not_compared(runs) -> list[str]:
    """Sizes whose outputs were not compared with the reference, and why (empty: all verified)."""
    out = []
    for sr in runs:
        if sr.within_tolerance is not None:
            continue
        if sr.status == "skipped":
            why = "skipped, too large for --memory-mb"
        elif sr.status != "ok":
            why = f"kernel run ended with status {sr.status}"
        elif sr.reference is None:
            why = "no reference in the spec"
        elif not sr.reference.ok:
            why = f"reference {sr.reference.status}"
        else:
            why = "no output to compare"
        out.append(f"size {sr.size!r} not compared ({why})")
    for sr in runs:  # a [golden] that could not be compared is not a pass either
        out.extend(f"size {sr.size!r}: {why}" for why in sr.golden_not_compared)
    return out


def _print_text(spec, runs, findings, target, args, out) -> None:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..numerics.portrun import engine_summary, peaks_summary

    w = out.write
    storage = "fp32 storage" if args.fp32 else "precise storage"
    w(f"port {spec.name}  ({target.name}, {args.backend} backend, {storage})\n")
    w(f"  nki:       {spec.nki_path} :: {spec.kernel_name}\n")
    ref = spec.port.reference or "none"
    w(f"  reference: {ref}   tolerance rtol={spec.tolerance.rtol:g} atol={spec.tolerance.atol:g}\n")
    for sr in runs:
        binds = " ".join(f"{k}={v}" for k, v in sr.bindings.items())
        w(f"\nsize {sr.size}  {binds}  status {sr.status}")
        if sr.run:
            w(f"  kernel {sr.run.elapsed_s:.2f} s")
        if sr.reference:
            w(f", reference {sr.reference.status} {sr.reference.elapsed_s:.2f} s")
        w("\n")
        if sr.run and sr.run.error:
            at = f" (line {sr.run.error_line})" if sr.run.error_line else ""
            w(f"  error: {sr.run.error}{at}\n")
        for i, a in enumerate(sr.agreement):
            verdict = "PASS" if a.passed else "FAIL"
            w(f"  output {i} {list(a.shape)} {a.dtype}: max abs {a.max_abs:.3g}  max rel {a.max_rel:.3g}  "
              f"max ulp {a.max_ulp:.3g}  mismatches {a.mismatches}/{a.elements} ({100 * a.mismatch_fraction:.2f}%)  "
              f"NaN {a.nan_actual}  Inf {a.inf_actual}  {verdict}\n")
        for i, a in enumerate(sr.golden):
            w(f"  output {i} vs golden ({sr.golden_label}): max abs {a.max_abs:.3g}  max rel {a.max_rel:.3g}  "
              f"mismatches {a.mismatches}/{a.elements}  NaN in golden {a.nan_expected}  "
              f"{'PASS' if a.passed else 'FAIL'}\n")
        for why in sr.golden_not_compared:
            w(f"  golden not compared: {why}\n")
        if sr.run and sr.run.status == "ok":
            p = peaks_summary(sr.run.peaks, target)
            sl = f", line {p['sbuf_line']}" if p["sbuf_line"] else ""
            pl = f", line {p['psum_line']}" if p["psum_line"] else ""
            w(f"  SBUF peak {_fmt_bytes(p['sbuf_bytes_per_partition'])}/partition ({p['sbuf_percent']:.1f}% of "
              f"{p['sbuf_usable_bytes_per_partition']:,} usable on {target.name}{sl})\n")
            w(f"  PSUM peak {_fmt_bytes(p['psum_bytes_per_partition'])}/partition ({p['psum_percent']:.1f}%), "
              f"{p['psum_banks']} of {p['psum_banks_total']} banks{pl}\n")
            eng = engine_summary(sr.run.trace)
            parts = "  ".join(f"{e} {v['count']} ({100 * v['share']:.0f}%)" for e, v in eng.items())
            w(f"  instructions {len(sr.run.trace)}: {parts or 'none recorded'}\n")
        for note in sr.notes:
            if "truncat" in note or "degrad" in note or "skipped" in note:
                w(f"  note: {note}\n")
    w("\n")
    if findings:
        w(f"findings ({len(findings)}):\n")
        for f in findings:
            loc = f"{f.file}:{f.line}" if f.line else (f.file or "")
            w(f"  {f.id:>4} {f.severity.value:<7} {f.rule} {f.name}  {loc}\n        {f.message}\n")
    else:
        w("findings: none\n")
    compared = [sr for sr in runs if sr.within_tolerance is not None]
    ok = sum(1 for sr in compared if sr.within_tolerance)
    w(f"summary: {ok} of {len(runs)} sizes within tolerance"
      + (f" ({len(runs) - len(compared)} not compared)" if len(compared) < len(runs) else "") + "\n")
    missing = not_compared(runs)
    if missing:
        w(f"INCOMPLETE: {'; '.join(missing)}: not verified, so the run fails (exit 1)\n")


def run(args: argparse.Namespace) -> int:
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from ..findings import dedupe, prioritize
    from ..api.hardware import get_target
    from ..numerics.portrun import simulate_size
    from ..numerics.spec import SpecError, load_spec
    from ..toolchain.registry import get_backend

    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    if args.memory_mb < 256:
        raise UsageError("--memory-mb must be at least 256")
    apply_sandbox(args)
    try:
        spec = load_spec(args.spec)
    except SpecError as exc:
        raise UsageError(str(exc)) from None
    try:
        sizes = [spec.size(n) for n in args.size] if args.size else list(spec.sizes)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    try:
        backend = get_backend(args.backend)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    target = get_target(args.target or spec.target)
    prof = _load_profile(args.profile)  # a bad profile is a usage error before anything runs

    from rich.console import Console

    console = Console(stderr=True, highlight=False)
    runs = []
    for i, size in enumerate(sizes, 1):
        if len(sizes) > 1:
            console.print(f"[{i}/{len(sizes)}] size {size.name}: simulating ...", style="dim")
        try:
            runs.append(simulate_size(spec, size, backend, target=target, precise=not args.fp32,
                                      stochastic_rounding=args.stochastic_rounding, timeout_s=args.timeout,
                                      memory_mb=args.memory_mb))
        except SpecError as exc:
            raise UsageError(str(exc)) from None
    perf_doc, perf_findings = _performance(spec, runs, target, prof)
    findings = prioritize(dedupe([*(f for sr in runs for f in sr.findings), *perf_findings]))
    code = exit_code(findings, args.fail_on)
    if any(sr.within_tolerance is False or any(not g.passed for g in sr.golden) for sr in runs) \
            and args.fail_on != "never":
        code = 1  # outside tolerance of the reference or of the captured CUDA outputs
    incomplete = not_compared(runs)
    if incomplete:
        code = 1  # a skipped or uncompared size is never a pass, whatever --fail-on says
    if args.format == "json":
        doc = {"schema": SCHEMA, "port": spec.summary(), "target": target.name, "backend": args.backend,
               "precise": not args.fp32, "tolerance": spec.tolerance.model_dump(),
               "sizes": [_size_json(sr, target) for sr in runs],
               "performance": perf_doc, "findings": [f.to_json() for f in findings],
               "complete": not incomplete, "incomplete": incomplete, "exit_code": code}
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        out = _Printable(sys.stdout)  # a kernel's exception text never drives the terminal
        _print_text(spec, runs, findings, target, args, out)
        if perf_doc:
            _print_performance(perf_doc, out)
    return code


def _load_profile(profile: str | None):
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from .. import perf

    if not profile:
        return None
    try:
        return perf.load_profile(profile)
    except perf.ProfileError as exc:
        raise UsageError(str(exc)) from None


def _performance(spec, runs, target, prof) -> tuple[dict[str, Any] | None, list]:
    """Cost-model estimate of the largest size that ran (and the profile beside it, when given)."""
    # deferred: a command imports the engine only when it runs (CLI start-up time)
    from .. import perf

    ok = [sr for sr in runs if sr.run is not None and sr.run.status == "ok" and sr.run.trace]
    if not ok:
        return None, (perf.profile_findings(prof, file=str(spec.nki_path)) if prof else [])
    sr = max(ok, key=lambda r: spec.input_bytes(spec.size(r.size)))
    est = perf.estimate(sr.run, target, min_input_bytes=spec.input_bytes(spec.size(sr.size)),
                        min_output_bytes=sum(o.nbytes for o in sr.run.outputs))
    findings = perf.perf_findings(est, sr.run, target, file=str(spec.nki_path))
    if prof is not None:
        est = perf.merge_profile(est, prof, kernel_name=spec.kernel_name)
        findings += perf.profile_findings(prof, file=str(spec.nki_path))
    doc = perf.to_performance(est).model_dump(mode="json")
    doc["size"] = sr.size
    return doc, findings


def _print_performance(doc: dict[str, Any], out) -> None:
    w = out.write
    for note in doc.get("notes") or []:
        w(f"note: {note}\n")
    w(f"\nperformance (size {doc['size']}, estimate): {doc.get('estimated_time_us') or 0:.1f} us, "
      f"bottleneck {doc.get('bottleneck')}, MFU {doc.get('mfu_estimated_percent')}%\n")
    for row in doc.get("comparison") or []:
        est, meas = row.get("estimate"), row.get("measured")
        if meas is None:
            continue
        ratio = row.get("estimate_over_measured")
        est_s = f"{est:.4g}" if isinstance(est, (int, float)) else "-"
        w(f"  {row['metric']:<22} estimate {est_s:>12}  measured {meas:>12.4g}"
          + (f"  (x{ratio:.2f})" if ratio else "") + "\n")


class _Printable:
    """A text stream that shows terminal control characters as escapes (`\\x1b`)."""

    def __init__(self, stream) -> None:
        # deferred: a command imports the engine only when it runs (CLI start-up time)
        from ..infra.redact import neutralise

        self.stream, self.neutralise = stream, neutralise

    def write(self, text: str) -> int:
        return self.stream.write(self.neutralise(text))
