"""Number and line normalisation of the grounding check (feedback/numbers.py), case by case."""

import pytest

from nki_assist.feedback.numbers import Grounded, line_refs, quantities

FINDING = ("64 DMA transfers average 640 B per descriptor (minimum for efficiency 2,048 B); they take 90% of DMA "
           "time. Transfers of >= 4,096 B per partition would be up to 2.31x faster (estimate). DMA has a ~1.3 us "
           "fixed cost. HBM loads move 2,629,632 bytes (2.0x redundant). max abs 3.05e-05; 449x slower.")
EVIDENCE = {"mismatch_fraction": 0.268571, "dma_time_us": 57.319, "threshold_bytes": 2048, "utilization": 0.454,
            "pe_utilization_percent": 25.0, "valid_min": 6.462348535570529e-27, "by_line": {"35": {"bytes": 8192}}}


@pytest.fixture(scope="module")
def grounded():
    g = Grounded()
    g.add_text(FINDING)
    g.add(EVIDENCE)
    return g


def ok(g, text):
    qs = quantities(text)
    assert qs, f"no number found in {text!r}"
    return all(q in g for q in qs)


@pytest.mark.parametrize("text", [
    "4,096 B", "4096 B", "4 KiB", "4.0 KiB", "4 KB", "4096 bytes", "2 KiB", "2048",      # separators and units
    "1.3 us", "1300 ns", "0.0013 ms", "1.3 µs", "57.319 us", "57.3 us", "57 us", "0.057 ms",  # time units, rounding
    "2.31x", "2.3x", "131% faster", "449x", "449.00x", "2.0x", "2x",                        # factors (2x: as written)
    "26.9%", "27%", "45.4%", "45%", "0.454", "26.9 percent", "25%", "75%",                 # fractions, complements
    "3.05e-05", "3.1e-5", "0.0000305", "0.000031", "6.462e-27",                              # scientific notation
    "2,629,632 bytes", "2.63 MB", "2.5 MiB", "2.6 MB", "8 KiB", "90%", "640 B", "0.64 KB",
])
def test_faithful_forms_are_grounded(grounded, text):
    assert ok(grounded, text)


@pytest.mark.parametrize("text", [
    "4,097 B", "5 KiB", "1.4 us", "1200 ns", "2.32x", "2.4x", "3x", "132% faster",          # near misses
    "26.8%", "46%", "3.07e-05", "0.000032", "2.7 MB", "91%", "650 B", "7 KiB", "83.2 ms",
    "3", "0.00003",      # 3.05e-05 to one significant digit: rounding needs at least two
    "17 loads",          # small integers must be grounded too (only 0 and 1 are free)
    "128,128",           # neither 128128 nor the list 128, 128 is grounded here
])
def test_numbers_that_appear_nowhere_are_rejected(grounded, text):
    assert not ok(grounded, text)


def test_structural_tokens_are_not_numbers():
    assert quantities("2-D tiles, a 3D grid, the 2nd pass, fp32, F3, trn2, e4m3, x512, nl.float32") == []
    assert quantities("1. Hoist the load\n2) Block the loop\n  3. Cast once") == []
    assert [q.raw for q in quantities("step 2 of 3")] == ["2", "3"]  # only list numbering is skipped


def test_tokens_keep_units_and_lists():
    qs = quantities("[128,512] moving, 64x128 of the PE array, 4,096 B, 26.9 %, 2^-24, K=4096")
    assert [(q.raw, q.value, q.unit) for q in qs] == [
        ("128,512", 128512.0, None), ("64", 64.0, None), ("128", 128.0, None), ("4,096 B", 4096.0, "B"),
        ("26.9 %", 26.9, "%"), ("2", 2.0, None), ("-24", 24.0, None), ("4096", 4096.0, None)]
    assert qs[0].parts == (128.0, 512.0)  # in brackets: also the list 128, 512
    assert quantities("4,096 B")[0].parts == ()  # a thousands separator, not a list


def test_list_in_brackets_is_grounded_by_its_parts():
    g = Grounded()
    g.add_text("Tile the operands to the limits (stationary [128,128], moving [128,512]).")
    assert ok(g, "stationary 128 x 128, moving [128,512]")
    assert not ok(g, "moving [128,1024]")


def test_line_references():
    assert line_refs("see line 19, then lines 20, 22 and 24; lines 30-32; gemm_nki.py:41; L7") == [
        20, 22, 24, 30, 32, 19, 41, 7]
    assert line_refs("line 20, 8 significant bits") == [20]  # singular: one line, not a list
    assert line_refs("loop_line 30 and baseline 4") == []


def test_evidence_key_gives_the_unit():
    g = Grounded()
    g.add({"dma_time_us": 83.2, "bytes_per_partition": 256, "est_speedup": 1.8, "lane_share_percent": 50.0})
    assert ok(g, "83 us") and ok(g, "0.0832 ms") and ok(g, "256 B") and ok(g, "0.25 KiB")
    assert ok(g, "80% faster") and ok(g, "50% of the lanes idle")
    assert not ok(g, "83 ms")


def test_autofix_edit_positions_are_not_grounded_facts():
    from nki_assist.feedback.grounding import finding_numbers
    from nki_assist.findings import Edit, Finding, Fix

    edit = Edit(line=77, column=913, end_line=77, end_column=925, content="range")
    f = Finding(rule="NKI502", name="deprecated-loop-iterator", category="deprecated-api", severity="info",
                file="k.py", line=3, message="`nl.static_range` is deprecated.",
                autofix=Fix(message="use range", applicability="safe", edits=[edit]))
    g = finding_numbers(f)
    assert quantities("3")[0] in g  # its own line stays grounded
    assert quantities("913")[0] not in g
    assert quantities("925")[0] not in g
