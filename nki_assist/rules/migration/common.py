"""What every migration check shares: the check registry (`CHECKS`) and the pair context (`Ctx`): the CUDA
and NKI kernels, how their parameters pair, the port's output store, and `Ctx.finding`.

Every finding is anchored on the NKI line, names the CUDA line in `related` and in evidence, and says
how CUDA and NKI parameters were paired. A check whose premise cannot be established from the facts
stays silent."""

from __future__ import annotations

from typing import Any

from ...api.hardware import Target
from ...findings import Finding, RelatedLocation, Severity
from ...parse.cuda_model import CudaFile, CudaKernel
from ...parse.nki_model import NkiFile, NkiKernel
from ..registry import get
from ..runner import CheckSet
from .pair import Pairing, output_store, pair_constants, pair_params

# The migration checks in registration (= definition) order; run by run_migration_rules.
CHECKS = CheckSet("migration")


class Ctx:
    def __init__(self, cf: CudaFile, nf: NkiFile, ck: CudaKernel, nk: NkiKernel, target: Target,
                 nki_source: str | None = None):
        self.cf, self.nf, self.ck, self.nk, self.target = cf, nf, ck, nk, target
        self.pairing: Pairing = pair_params(ck, nk)
        pair_constants(self.pairing, cf, ck, nk, nki_source)
        self.store = output_store(nk)

    def finding(self, rule: str, nki_line: int, cuda_line: int, message: str, evidence: dict[str, Any],
                cuda_note: str, *, severity: Severity | None = None, fix: str | None = None,
                column: int | None = None, confidence: str = "high") -> Finding:
        ev = {"cuda_file": self.cf.path, "cuda_line": cuda_line, "cuda_kernel": self.ck.name,
              "nki_kernel": self.nk.name, **evidence}
        fields: dict[str, Any] = dict(file=self.nf.path, line=max(1, nki_line), evidence=ev, confidence=confidence,
                                      related=[RelatedLocation(file=self.cf.path, line=max(1, cuda_line),
                                                               message=cuda_note)])
        if column:
            fields["column"] = column
        if fix is not None:
            fields["fix"] = fix
        return get(rule).finding(message, severity=severity, **fields)

    @property
    def store_line(self) -> int:
        return self.store.line if self.store is not None else self.nk.line
