"""`nki-assist review PORT... -o DIR` (issue 43): the results table, resume after a kill, hostile submissions."""

from __future__ import annotations

import csv
import json
import os
import signal
import time

from batch_helpers import cli, counts, make_port, mtimes, popen, rows, small_batch


def test_batch_table_matches_each_review_and_resumes(tmp_path):
    manifest = small_batch(tmp_path / "b", 4)
    out = tmp_path / "out"
    done = cli(["review", str(manifest), "-o", str(out), "--jobs", "2", "--fail-on", "never"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert counts(done.stderr) == (4, 0)
    table = rows(out)
    assert [r["id"] for r in table] == [json.loads(x)["id"] for x in manifest.read_text().splitlines()]
    for row in table:
        review = json.loads((out / row["review"]).read_text())
        assert (out / row["review"].replace(".json", ".md")).is_file()
        assert row["status"] == "ok"
        assert row["verdict"] == review["assessment"]["verdict"]
        assert row["errors"] == sum(f["severity"] == "error" for f in review["findings"])
        assert row["top_rule"] == (review["findings"][0]["rule"] if review["findings"] else None)
        for r in review["assessment"]["rubric"]:
            assert row[f"rubric.{r['criterion']}"] == r["score"]
        assert {k for k in row if k.startswith("numerics.")} == {f"numerics.{s['name']}"
                                                                  for s in review["numerics"]["sizes"]}
        # a time per size that ran; the headline estimate is the largest size's
        per = review["performance"].get("per_size_us") or {}
        assert {k: v for k, v in row.items() if k.startswith("est_us.")} == {f"est_us.{k}": v for k, v in per.items()}
        if row["est_time_us"] is not None:
            assert per[row["est_size"]] == row["est_time_us"] == max(per.values())
            assert set(per) <= {s["name"] for s in review["numerics"]["sizes"]}
    assert sorted(r["rank"] for r in table) == [1, 2, 3, 4]
    with open(out / "results.csv", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [r["id"] for r in csv_rows] == [r["id"] for r in table]
    assert [r["verdict"] for r in csv_rows] == [r["verdict"] for r in table]
    assert "rubric.memory-hierarchy" in csv_rows[0] and "est_time_us" in csv_rows[0]
    assert any(k.startswith("est_us.") for k in csv_rows[0])
    assert (out / "report.html").is_file()

    before = mtimes(out)
    again = cli(["review", str(manifest), "-o", str(out), "--fail-on", "never"])
    assert counts(again.stderr) == (0, 4)  # unchanged: nothing redone
    assert mtimes(out) == before
    # one submission's kernel changes: only it is redone
    first = json.loads(manifest.read_text().splitlines()[0])
    spec = tmp_path / "b" / first["spec"]
    kernel = next(p for p in spec.parent.glob("*_nki.py"))
    kernel.write_text(kernel.read_text() + "\n# resubmitted\n")
    third = cli(["review", str(manifest), "-o", str(out), "--fail-on", "never"])
    assert counts(third.stderr) == (1, 3)
    assert [r["id"] for r in rows(out)] == [r["id"] for r in table]  # one row per id, in order
    forced = cli(["review", str(manifest), "-o", str(out), "--force", "--jobs", "1", "--fail-on", "never"])
    assert counts(forced.stderr) == (4, 0)


def test_killed_batch_redoes_nothing_finished(tmp_path):
    manifest = small_batch(tmp_path / "b", 6)
    out = tmp_path / "out"
    proc = popen(["review", str(manifest), "-o", str(out), "--jobs", "1", "--fail-on", "never"])
    results = out / "results.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if results.is_file() and len(results.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)  # no cleanup at all
    proc.wait(30)
    time.sleep(1.0)  # the pool's processes die with their parent (PDEATHSIG), and append nothing
    finished = {r["id"] for r in rows(out)}
    assert 2 <= len(finished) < 6
    before = mtimes(out)
    again = cli(["review", str(manifest), "-o", str(out), "--jobs", "2", "--fail-on", "never"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert counts(again.stderr) == (6 - len(finished), len(finished))
    after = mtimes(out)
    assert {n: after[n] for n in before} == before  # the finished reviews were not rewritten
    assert sorted(r["id"] for r in rows(out)) == sorted(json.loads(x)["id"] for x in manifest.read_text().splitlines())


def test_hostile_submissions_cost_only_their_rows(tmp_path):
    honest = make_port(tmp_path / "subs" / "honest")
    make_port(tmp_path / "subs" / "hang", "while True:\n    pass")
    make_port(tmp_path / "subs" / "hog", "import numpy\nblob = numpy.ones(2**31)")
    make_port(tmp_path / "subs" / "exits", "import os\nos._exit(0)")
    bad = tmp_path / "subs" / "badspec"
    bad.mkdir()
    (bad / "port.toml").write_text("[port\nname=")
    out = tmp_path / "out"
    done = cli(["review", str(tmp_path / "subs"), "-o", str(out), "--jobs", "2", "--timeout", "5",
                "--memory-mb", "768"])
    assert done.returncode == 1  # failed rows and blocked ports
    by_id = {r["id"]: r for r in rows(out)}
    assert sorted(by_id) == ["badspec", "exits", "hang", "hog", "honest"]
    assert by_id["honest"]["status"] == "ok" and by_id["honest"]["correct"] is True
    assert by_id["badspec"]["status"] == "spec-error" and "invalid TOML" in by_id["badspec"]["message"]
    for ident in ("hang", "hog", "exits"):
        row = by_id[ident]
        assert row["status"] == "ok" and row["verdict"] == "block", row  # reviewed: the kernel's failure is a finding
        assert row["numerics.L512"] == "error"
    review = json.loads((out / by_id["hang"]["review"]).read_text())
    assert any("timeout" in (m.get("note") or "") or "timed out" in (m.get("note") or "")
               for m in review["numerics"]["matrix"]), review["numerics"]["matrix"]
    assert honest.is_file()


def test_batch_usage_errors(tmp_path):
    manifest = small_batch(tmp_path / "b", 2)
    afile = tmp_path / "f.txt"
    afile.write_text("x")
    cases = [
        (["review", str(manifest)], "a batch needs -o DIR"),
        (["review", str(manifest), "-o", str(afile)], "a batch writes a folder"),
        (["review", "-o", str(tmp_path / "o"), "--template", str(manifest)], "--template and --submissions go together"),
        (["review", str(manifest), "-o", str(tmp_path / "o"), "--llm-batch"], "--llm-batch needs --llm openai"),
        (["review", str(manifest), "-o", str(tmp_path / "o"), "--jobs", "0"], "--jobs must be at least 1"),
        (["review", str(tmp_path / "nope"), str(manifest), "-o", str(tmp_path / "o")], "no such file or folder"),
    ]
    for args, message in cases:
        done = cli(args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr[-500:])
    # one spec and a file name: the single review, as before (a report file, no batch folder)
    spec = tmp_path / "b" / json.loads(manifest.read_text().splitlines()[0])["spec"]
    single = cli(["review", str(spec), "-o", str(tmp_path / "one.json"), "--format", "json", "-q", "--no-run"])
    assert single.returncode in (0, 1), single.stderr[-500:]
    assert json.loads((tmp_path / "one.json").read_text())["schema"] == "nki-assist/review@1"
    assert not (tmp_path / "results.jsonl").exists()
