"""Issue 16: the grounding check over every port in the repository.

(a) A reply that only restates the findings (one item per finding, what = message, fix = fix) passes, on
every example, eval case and fixture port; so does one whose texts quote *everything* a finding holds
(evidence JSON, related locations), and one that rewrites each number of the message in another faithful
format (units, separators, rounding). (b) Mutations of the mechanical reply always fail with the right
violation: an invented number, a line no finding names, a dropped error, a lowered severity, a changed
category, an invented id.
"""

from __future__ import annotations

import json

import pytest
from number_rewrites import rewrite
from reviewed_ports import ALL_PORTS

from nki_assist.feedback import load_rubric
from nki_assist.feedback.grounding import Context, check
from nki_assist.feedback.mechanical import mechanical_reply
from nki_assist.feedback.numbers import quantities
from nki_assist.api.hardware import get_target

RUBRIC = load_rubric(None)


def setup(port):
    r = port.review
    target = get_target(r.port.target)
    return mechanical_reply(r, RUBRIC, target), Context(r, target, port.sources, RUBRIC)


def kinds(violations):
    return sorted({v.kind for v in violations})


@pytest.mark.parametrize("spec", ALL_PORTS)
def test_mechanical_reply_passes(reviewed_ports, spec):
    reply, ctx = setup(reviewed_ports[spec])
    assert [it.what for it in reply.items] == [f.message for f in ctx.review.findings]
    assert [v.message for v in check(reply, ctx)] == []


def _everything(f) -> str:
    related = " ".join(f"{r.file}:{r.line} {r.message}" for r in f.related)
    return f"{f.message} {json.dumps(f.evidence)} {related} est_speedup {f.est_speedup}"


@pytest.mark.parametrize("spec", ALL_PORTS)
def test_quoting_everything_a_finding_holds_passes(reviewed_ports, spec):
    """Numbers and lines anywhere in a cited finding (evidence at any depth, related locations) are grounded."""
    reply, ctx = setup(reviewed_ports[spec])
    for it in reply.items:
        f = ctx.by_id[it.finding_ids[0]]
        it.why = _everything(f)
        it.profiling = f"See line {f.line}." if f.line else it.profiling
    assert [v.message for v in check(reply, ctx)] == []


def test_rewrite_really_changes_numbers():
    text = "Transfers of >= 4,096 B, 2.31x faster, ~1.3 us, 26.9% out, max abs 3.05e-05, 1,183,744 bytes."
    assert rewrite(text) == ("Transfers of >= 4 KiB, 2.3x faster, ~1300 ns, 26.9 percent out, max abs 0.0000305, "
                             "1156 KiB.")


@pytest.mark.parametrize("spec", ALL_PORTS)
def test_faithfully_reformatted_numbers_pass(reviewed_ports, spec):
    reply, ctx = setup(reviewed_ports[spec])
    for it in reply.items:
        it.what = rewrite(it.what)
        it.fix = rewrite(it.fix)
    assert [v.message for v in check(reply, ctx)] == []


# -- (b) mutations ---------------------------------------------------------------------------------
INVENTED = ["7,919.37 us", "0.6173", "9137 B", "41.83x", "313.7%"]


def _ungrounded(ctx, cited):
    allowed = ctx.numbers_for(cited)
    for text in INVENTED:
        if all(q not in allowed for q in quantities(text)):
            return text
    raise AssertionError("every invented number happens to be grounded")


def invent_number(reply, ctx):
    it = reply.items[-1]
    number = _ungrounded(ctx, [ctx.by_id[i] for i in it.finding_ids])
    it.why += f" This costs {number} per call."
    return "number", f"item {it.priority} ({it.title[:60]!r}) why states number(s) {number} that", set()


def unnamed_line(reply, ctx):
    it = reply.items[0]
    named = ctx.lines_of(ctx.by_id[i] for i in it.finding_ids)
    line = next(n for n in range(1, 10_000) if n not in named)
    it.fix += f" The same problem is on line {line}."
    return "line", f"references line(s) {line} that no cited finding points at", set()


def drop_error(reply, ctx):
    errors = [it for it in reply.items if it.severity == "error"]
    if not errors:
        return None
    reply.items.remove(errors[-1])
    return "uncovered-error", f"error finding(s) {errors[-1].finding_ids[0]} are not covered", set()


def lower_severity(reply, ctx):
    lower = {"error": "warning", "warning": "info"}
    it = next((it for it in reply.items if it.severity in lower), None)
    if it is None:
        return None
    was, it.severity = it.severity, lower[it.severity]
    # a lowered error item may also end up above an error item
    return "severity", f"is {was!r}; severities may not change", {"order"} if was == "error" else set()


def change_category(reply, ctx):
    it = reply.items[0]
    it.criterion = next(c for c in ("hardware-utilization", "memory-hierarchy") if c != it.criterion)
    return "criterion", "categories may not change", set()


def invent_id(reply, ctx):
    fake = f"F{len(ctx.review.findings) + 1}"
    reply.items[0].finding_ids.append(fake)
    return "unknown-id", f"{fake} that do not exist", set()


@pytest.mark.parametrize("mutate, at_least", [
    (invent_number, 35), (unnamed_line, 35), (drop_error, 15), (lower_severity, 30), (change_category, 35),
    (invent_id, 35),
], ids=lambda x: getattr(x, "__name__", ""))
def test_mutation_always_fails_with_the_right_violation(reviewed_ports, mutate, at_least):
    tried = 0
    for spec in ALL_PORTS:
        reply, ctx = setup(reviewed_ports[spec])
        outcome = mutate(reply, ctx) if reply.items else None
        if outcome is None:
            continue
        kind, needle, also = outcome
        v = check(reply, ctx)
        assert kind in kinds(v) and set(kinds(v)) <= {kind} | also, (spec, v)
        assert any(x.kind == kind and needle in x.message for x in v), (spec, needle, v)
        tried += 1
    assert tried >= at_least


def test_ports_cover_examples_eval_cases_and_fixtures():
    assert any(p.startswith("examples/") for p in ALL_PORTS)
    assert sum(p.startswith("evals/cases/") for p in ALL_PORTS) >= 20
    assert sum(p.startswith("tests/fixtures/ports/") for p in ALL_PORTS) >= 10
