"""The written assessment leads with the diagnosis (issue 39 item 5): a finding marked as the diagnosis
(evidence["diagnosis"] or a rule in feedback/lead.py's DIAGNOSIS_RULES) is the first item of the deterministic
draft and of the mechanical reply, the summary opens with its line, cause and pattern, and its proven diff is
the item's fix."""

from __future__ import annotations

from nki_assist.api.hardware import get_target
from nki_assist.feedback import lead
from nki_assist.feedback.drafter import draft
from nki_assist.feedback.mechanical import mechanical_reply
from nki_assist.feedback.rubric import load_rubric
from nki_assist.findings import Severity, prioritize
from nki_assist.rules.registry import get
from nki_assist.schema import PortInfo, Review

DIFF = """--- a/k_nki.py
+++ b/k_nki.py
@@ -25,1 +25,1 @@
-        nl.store(y[t * 64 + i_p, i_f], value=out)
+        nl.store(y[t * 128 + i_p, i_f], value=out)
"""


def _review(diagnosed: bool) -> Review:
    exp = get("NKI402").finding("exp without max", file="k_nki.py", line=22, severity=Severity.ERROR)
    tail = get("NKI203").finding("tail dropped", file="k_nki.py", line=20, severity=Severity.ERROR)
    ev = {"diagnosis": {"cause": "the store offset advances 64 rows per 128-row tile",
                        "pattern": "rows 0-127 right, rows 64-191 overwritten, rows 192-255 never written",
                        "diff": DIFF, "proven": True}} if diagnosed else {}
    store = get("SIM112").finding("output partly written", file="k_nki.py", line=25, severity=Severity.WARNING,
                                  source="simulation", evidence=ev)
    return Review(port=PortInfo(name="k", target="trn2", nki="k_nki.py"), findings=prioritize([exp, tail, store]))


def _draft(review):
    return draft(review, load_rubric(None), get_target("trn2"))


def test_diagnosis_leads_items_and_summary_with_its_proven_diff():
    a = _draft(_review(True))
    first = a.items[0]
    assert first.title.endswith("(k_nki.py:25)")  # a warning leads two errors: it is the diagnosis
    assert first.fix.startswith("Proven by re-running all sizes:\n```diff\n--- a/k_nki.py")
    assert "+        nl.store(y[t * 128 + i_p, i_f], value=out)" in first.fix
    assert a.summary.startswith("Diagnosis: k_nki.py:25, the store offset advances 64 rows per 128-row tile "
                                "(shown by: rows 0-127 right")
    assert "proven by re-running every size" in a.summary and a.verdict == "block"


def test_without_a_diagnosis_the_order_is_by_severity():
    a = _draft(_review(False))
    assert not a.items[0].title.endswith("(k_nki.py:25)") and not a.summary.startswith("Diagnosis")
    assert "Proven by re-running" not in " ".join(i.fix for i in a.items)


def test_mechanical_reply_puts_the_diagnosis_first():
    review = _review(True)
    reply = mechanical_reply(review, load_rubric(None), get_target("trn2"))
    sim = next(f for f in review.findings if f.rule == "SIM112")
    assert reply.items[0].finding_ids == [sim.id] and reply.summary.startswith("Diagnosis: k_nki.py:25")


def test_diagnosis_rules_and_diff_detection(monkeypatch):
    f = get("NKI203").finding("x", file="k.py", line=3, fix=DIFF)
    assert lead.diagnosis_of(f) is None
    monkeypatch.setattr(lead, "DIAGNOSIS_RULES", frozenset({"NKI203"}))
    assert lead.diagnosis_of(f) == {} and lead.proven_diff(f) == DIFF
    assert lead.proven_diff(get("NKI203").finding("x", file="k.py", line=3, fix="Use t * 128.")) is None
    assert not lead.is_unified_diff("--- just a dash line\nno hunk")


def test_the_diagnosis_stages_proven_root_cause_leads_with_its_repair_diff():
    """DIAG101 (nki_assist/diagnose) is a diagnosis by its rule id; its diff rides in evidence["repair"]."""
    exp = get("NKI402").finding("exp without max", file="k_nki.py", line=22, severity=Severity.ERROR)
    diag = get("DIAG101").finding("the store offset advances 64 rows per 128-row tile", file="k_nki.py", line=25,
                                  fix="proven by re-running all sizes:\n" + DIFF,
                                  evidence={"repair": {"line": 25, "diff": DIFF}, "root_cause_lead": True})
    review = Review(port=PortInfo(name="k", target="trn2", nki="k_nki.py"), findings=prioritize([exp, diag]))
    assert lead.proven_diff(diag) == DIFF and lead.diagnosis_of(diag) == {}
    a = _draft(review)
    assert a.items[0].title.endswith("(k_nki.py:25)")
    assert "+        nl.store(y[t * 128 + i_p, i_f], value=out)" in a.items[0].fix
    assert a.summary.startswith("Diagnosis: k_nki.py:25, the store offset advances 64 rows per 128-row tile")


def test_the_html_report_shows_the_proven_diff_line_by_line():
    from nki_assist.report.html import render_html

    hostile = DIFF.replace("value=out)\n", "value=out)  # <script>x</script>\n")
    diag = get("DIAG101").finding("the store offset advances 64 rows per 128-row tile", file="k_nki.py", line=25,
                                  fix="proven by re-running all sizes:\n" + hostile,
                                  evidence={"repair": {"line": 25, "diff": hostile}, "root_cause_lead": True})
    review = Review(port=PortInfo(name="k", target="trn2", nki="k_nki.py"), findings=prioritize([diag]))
    review.assessment = _draft(review)
    page = render_html(review)
    pre = page.split('<pre class="diff"><code>')[1].split("</code></pre>")[0]
    assert pre.splitlines()[0] == "--- a/k_nki.py" and len(pre.splitlines()) == 5  # its lines kept
    assert "+        nl.store(y[t * 128 + i_p, i_f], value=out)  # &lt;script&gt;" in pre
    assert "<script>" not in page and "```" not in page
