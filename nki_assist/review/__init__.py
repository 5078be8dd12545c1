"""The review of a port: static and migration checks, the simulator's runs, numerics and the cost model,
evidence reconciliation, the drafted assessment.

Parts:
  options      what a review is asked to do and answers (`ReviewOptions`, `ReviewResult`)
  static_stage, performance_stage   the static/migration checks and the cost-model stage of the pipeline
  pipeline     the entry points (`review_port` for a port spec, `review_files` without one) and the stages
               in order: static, migration, runs, numerics scenarios, performance, assessment
  reconcile    evidence reconciliation: each static/migration claim about run time checked against the run
  claims       the claim kinds (one table, one module per kind) reconcile dispatches to
  ranges       the value-range evidence (exp overflow margins, activation input ranges) reconcile reads
  stage_links  one cause reported by several stages becomes one item

Import what you need from this package (`from nki_assist.review import review_port`); the modules behind it
are private to it. Names are loaded on first use so that importing one of them stays cheap.
"""

from __future__ import annotations

from ..infra.lazy import lazy_exports

_PUBLIC = {
    "options": ("ReviewOptions", "ReviewResult"),
    "pipeline": ("review_port", "review_files", "one_line_error", "assess"),
}
__all__, __getattr__ = lazy_exports(__name__, _PUBLIC)
