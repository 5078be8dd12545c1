"""Reviews of every port in the repository (the example, the eval cases, the fixture ports), made once per
test session and cached as JSON under pytest's temp dir: the grounding property tests and the eval-replay
freshness tests read them instead of reviewing each port again (a review takes 1-5 s)."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*/port.toml"))
EVAL_CASES = sorted((ROOT / "evals" / "cases").glob("*/port.toml"))
FIXTURE_PORTS = sorted((ROOT / "tests" / "fixtures" / "ports").glob("*/port.toml"))
ALL_PORTS = [p.relative_to(ROOT).as_posix() for p in EXAMPLES + EVAL_CASES + FIXTURE_PORTS]


@dataclass
class ReviewedPort:
    spec: str  # relative to the repository root
    review: object  # nki_assist.schema.Review
    sources: dict[str, str]

    @property
    def dir(self) -> Path:
        return (ROOT / self.spec).parent


def _review_json(spec: str) -> str:
    from nki_assist.review import ReviewOptions, review_port

    return review_port(str(ROOT / spec), ReviewOptions(plots=False)).review.model_dump_json()


def review_all(cache: Path, specs: list[str] = ALL_PORTS) -> dict[str, ReviewedPort]:
    from nki_assist.evalsuite.replies import sources_of
    from nki_assist.schema import Review

    if cache.is_file():
        raw = json.loads(cache.read_text(encoding="utf-8"))
    else:
        ctx = multiprocessing.get_context("spawn")  # the test process may run threads: no fork
        with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
            raw = dict(zip(specs, pool.map(_review_json, specs)))
        cache.write_text(json.dumps(raw), encoding="utf-8")
    out = {}
    for spec, js in raw.items():
        review = Review.model_validate_json(js)
        out[spec] = ReviewedPort(spec, review, sources_of(review, (ROOT / spec).parent))
    return out
