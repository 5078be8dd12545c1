"""One batch task: review a port in this process and render it. Runs in a pool worker or a Ray worker; kernels
still run in the sandbox's child processes with their time and memory limits."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .manifest import Task


@dataclass
class BatchConfig:
    """What every task of a batch shares (picklable: it travels to pool and Ray workers)."""

    review: dict[str, Any] = field(default_factory=dict)  # ReviewOptions fields
    formats: tuple[str, ...] = ("json", "md")  # rendered per submission; json always
    task_timeout_s: float = 600.0  # the whole review of one submission
    task_memory_mb: int = 0  # address-space limit of a pool worker's review (0: none; kernels have their own)
    sandbox: str | None = None
    # --llm-batch: the capture pass keeps each review's plots (`keep_plots`) and the drafting pass re-drafts the
    # captured review from `redraft_dir` instead of reviewing again (llm_batch.py)
    keep_plots: bool = False
    redraft_dir: str | None = None

    def key_options(self) -> dict[str, Any]:
        """The options a review's result depends on (part of the resume key)."""
        drop = {"cache_dir", "base_url", "llm_timeout_s"}
        return {"review": {k: v for k, v in sorted(self.review.items()) if k not in drop},
                "formats": list(self.formats)}


@dataclass
class TaskResult:
    id: str
    key: str
    status: str  # rows.STATUSES
    wall_s: float
    files: dict[str, str] = field(default_factory=dict)  # ext -> rendered text
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _render(result, fmt: str) -> str:
    # deferred: renderers are imported only for the formats asked for
    from ..infra.redact import redact

    if fmt == "json":
        return json.dumps(result.review.to_json(), indent=2)
    if fmt == "html":
        # deferred: as above
        from ..report.html import render_html

        return redact(render_html(result.review, plots=result.plots))
    # deferred: as above
    from ..report.markdown import render_markdown

    return redact(render_markdown(result.review))


PLOTS = "plots.json"  # the capture pass's extra file: the review's plots as base64 PNGs


class _Captured:
    """A review read back from the capture pass, with its plots: what _render needs."""

    def __init__(self, review, plots: dict[str, bytes]):
        self.review, self.plots = review, plots


def _redraft(task: Task, cfg: BatchConfig, opts) -> dict[str, str] | None:
    """The captured review of `task`, its assessment drafted again with the real LLM settings, rendered; None
    when there is none here (a Ray worker on another machine, a capture that failed): then it is reviewed."""
    # deferred: as in run_task
    from ..numerics.spec import load_spec
    from ..review import assess
    from ..schema import Review

    folder = Path(cfg.redraft_dir or "") / "reviews"
    path = folder / f"{task.id}.json"
    if not cfg.redraft_dir or not path.is_file():
        return None
    review = Review.model_validate_json(path.read_text(encoding="utf-8"))
    plots_path = folder / f"{task.id}.{PLOTS}"
    plots = ({k: base64.b64decode(v) for k, v in json.loads(plots_path.read_text()).items()}
             if plots_path.is_file() else {})
    spec = load_spec(task.spec)
    sources = {}
    for shown, real in ((review.port.nki, spec.nki_path), (review.port.cuda, spec.cuda_path)):
        if shown and real is not None:
            sources[shown] = real.read_text(encoding="utf-8", errors="replace")
    review.assessment = assess(review, opts, sources)  # as the review itself drafts it
    result = _Captured(review, plots)
    return {fmt: _render(result, fmt) for fmt in cfg.formats}


def run_task(task: Task, key: str, cfg: BatchConfig) -> TaskResult:
    """Review one submission; every failure becomes a status, never an exception."""
    # deferred: a worker imports the review engine when its first task arrives (the parent never needs it)
    from ..feedback.rubric import RubricError
    from ..numerics.spec import SpecError
    from ..review import ReviewOptions, review_port
    from ..toolchain.isolation import configure

    t0 = time.perf_counter()
    try:
        configure(cfg.sandbox)
        opts = ReviewOptions(**{**cfg.review, **({"rubric": task.rubric} if task.rubric else {})})
        files = _redraft(task, cfg, opts)
        if files is not None:
            return TaskResult(task.id, key, "ok", time.perf_counter() - t0, files)
        opts.plots = opts.plots and ("html" in cfg.formats or cfg.keep_plots)
        result = review_port(task.spec, opts)
        files = {fmt: _render(result, fmt) for fmt in cfg.formats}
        if cfg.keep_plots and result.plots:
            files[PLOTS] = json.dumps({k: base64.b64encode(v).decode() for k, v in result.plots.items()})
        return TaskResult(task.id, key, "ok", time.perf_counter() - t0, files)
    except (SpecError, RubricError) as exc:
        return TaskResult(task.id, key, "spec-error", time.perf_counter() - t0, message=str(exc))
    except MemoryError:
        return TaskResult(task.id, key, "out-of-memory", time.perf_counter() - t0,
                          message="the review ran out of memory")
    except Exception as exc:  # one submission's internal error costs only its row
        return TaskResult(task.id, key, "error", time.perf_counter() - t0, message=f"{type(exc).__name__}: {exc}")
