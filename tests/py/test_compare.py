"""`capbench compare A B`: matching, direction, noise, regressions and bad input."""

import xml.etree.ElementTree as ET

import pytest
from capbench.report import compare, compare_out
from capbench.report.load import load_run
from report_files import FIXTURE, assert_png, scaled_copy, svg_texts, write_run
from records import make_result
from test_cli import assert_usage_error, capbench
from test_report_tables import SEARCHES_A, SEARCHES_B, recorded, run_copy


def test_a_run_against_itself_changes_nothing(tmp_path):
    out = tmp_path / "cmp"
    p = capbench("compare", str(FIXTURE), str(FIXTURE), "--fail-on-regression", "10", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "No change: every figure compared is the same in both runs." in p.stdout
    assert "there is no noise estimate" in p.stdout and "nothing is judged" in p.stdout
    assert "worse" not in p.stdout.split("Verdict")[1].split("A = ")[0]
    assert_png(out / "compare.png")
    assert "afp-v3 512 B" in svg_texts(out / "compare.svg")
    page = (out / "compare.html").read_text()
    assert "<svg" in page and "http://" not in page.split("<svg")[0]
    assert "| afp-v3 512 B | captured [pps] | 234,962 | 234,962 | 0 | no change |" in (out / "compare.md").read_text()


def test_a_slower_backend_is_worse_and_fails_the_regression_check(tmp_path):
    slow = scaled_copy(FIXTURE, tmp_path / "slow", "afp-v3", 0.7)
    unjudged = compare.compare(load_run(FIXTURE), load_run(slow))  # no repetitions, no --threshold
    assert not unjudged.judged and unjudged.regressions(0) == []
    assert "Nothing judged" in " ".join(compare_out.headline(unjudged))
    assert {compare_out.verdict(c) for c in unjudged.changes if not c.short and c.delta} == {compare_out.NOT_JUDGED}
    p = capbench("compare", str(FIXTURE), str(slow), "--fail-on-regression", "10", "--out", str(tmp_path / "u"))
    assert p.returncode == 0 and "nothing was judged" in p.stderr

    cmp = compare.compare(load_run(FIXTURE), load_run(slow), threshold_pct=5)
    worse = [c for c in cmp.changes if c.significant]
    # 64 B too: its generator fell short, but it lost frames, so its captured rate is the capture's
    # (verdict.LOSSY); only a lower bound (generator short, nothing lost) would not be judged
    assert {(c.key.series.backend, c.key.frame_len, c.metric.name) for c in worse} == {
        ("afp-v3", 64, "rx_pps"), ("afp-v3", 512, "rx_pps"), ("afp-v3", 1518, "rx_pps")}
    assert all(c.worse and c.rel_pct == pytest.approx(-30.0) for c in worse)
    assert cmp.regressions(10) == worse and cmp.regressions(40) == []

    p = capbench("compare", str(FIXTURE), str(slow), "--threshold", "5", "--fail-on-regression", "10")
    assert p.returncode == 1, p.stderr
    assert "3 figures worse by more than 10 %" in p.stderr and "(-30.0 %)" in p.stderr
    assert (slow / "report" / "compare-run-iperf" / "compare.html").exists()
    assert capbench("compare", str(FIXTURE), str(slow), "--threshold", "5").returncode == 0  # no check asked for
    assert capbench("compare", str(FIXTURE), str(slow), "--threshold", "5", "--fail-on-regression", "40"
                    ).returncode == 0
    back = capbench("compare", str(slow), str(FIXTURE), "--threshold", "5", "--fail-on-regression", "10",
                    "--out", str(tmp_path / "b"))
    assert back.returncode == 0 and "better" in back.stdout


def reps(tmp_path, name, received):
    return write_run(tmp_path / name, [make_result(backend="afp-v3", sent=1_000_000, received=r) for r in received])


def test_with_repetitions_the_noise_is_their_spread(tmp_path):
    a = load_run(reps(tmp_path, "a", [990_000, 1_000_000, 980_000]))
    same = load_run(reps(tmp_path, "same", [985_000, 995_000, 975_000]))  # overlaps A's range
    worse = load_run(reps(tmp_path, "worse", [900_000, 910_000, 905_000]))
    within = compare.compare(a, same)
    assert "t-test at 95 % on the repetitions" in within.noise_rule()
    rx = next(c for c in within.changes if c.metric.name == "rx_pps")
    assert rx.by_repetitions and not rx.significant and rx.worse and compare_out.verdict(rx).startswith("not significant (p ")
    assert within.regressions(0.1) == []  # worse, but within the noise
    assert compare_out.fmt_value(rx, "a") == "198,000 (196,000–200,000, sd 2,000)"  # median (min–max, sd) per 5 s
    beyond = compare.compare(a, worse)
    assert [c.metric.name for c in beyond.regressions(5)] == ["rx_pps", "loss_pct"]


def test_loss_where_there_was_none_is_a_regression(tmp_path):
    a = write_run(tmp_path / "a", [make_result(backend="pcap", sent=10_000_000)])
    b = write_run(tmp_path / "b", [make_result(backend="pcap", sent=10_000_000, received=9_999_999, socket_drops=1)])
    cmp = compare.compare(load_run(a), load_run(b), threshold_pct=5)
    loss = next(c for c in cmp.changes if c.metric.name == "loss_pct")
    assert loss.rel_pct is None and loss.worse and loss.significant
    assert compare_out.fmt_change(loss) == "+0.000010 pts (new)"
    assert capbench("compare", str(a), str(b), "--threshold", "5", "--fail-on-regression", "50").returncode == 1


def test_runs_with_nothing_in_common(tmp_path):
    a = write_run(tmp_path / "a", [make_result(backend="pcap")])
    b = write_run(tmp_path / "b", [make_result(backend="afp-v3")])
    assert_usage_error(capbench("compare", str(a), str(b)), "no measurement in common", "pcap", "afp-v3")


@pytest.mark.parametrize("args, words", [
    (["--fail-on-regression", "-1"], ["--fail-on-regression"]),
    (["--threshold", "0"], ["--threshold"]),
    (["--fail-on-regression", "lots"], ["--fail-on-regression"]),
])
def test_bad_options(args, words):
    assert_usage_error(capbench("compare", str(FIXTURE), str(FIXTURE), *args), *words)


def test_bad_runs(tmp_path):
    assert_usage_error(capbench("compare", str(tmp_path / "nothing"), str(FIXTURE)), "cannot read", "nothing")
    assert_usage_error(capbench("compare", str(FIXTURE), str(tmp_path)), "holds no results")


def test_the_html_is_well_formed_enough_to_parse_its_svg(tmp_path):
    slow = scaled_copy(FIXTURE, tmp_path / "slow", "afp-v3", 0.7)
    files = compare_out.write(compare.compare(load_run(FIXTURE), load_run(slow), 5.0), tmp_path / "out")
    page = files.html.read_text()
    svg = page[page.index("<svg"):page.index("</svg>") + 6]
    ET.fromstring(svg)
    assert 'class="worse"' in page


def test_a_truncated_run_is_compared_with_what_it_holds(tmp_path):
    import shutil

    cut = tmp_path / "cut"
    shutil.copytree(FIXTURE, cut)
    text = (cut / "trials.jsonl").read_text()
    (cut / "trials.jsonl").write_text(text[:-300])  # afp-v3 1518 B cut by a crash
    p = capbench("compare", str(FIXTURE), str(cut), "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert "capbench: B: 1 line of trials.jsonl skipped: line 6 cut short" in p.stderr
    assert "5 measurements in common, 1 only in A" in " ".join(p.stdout.split())  # lines wrap at 140


def test_unexplained_closer_to_zero_is_better(tmp_path):
    a = write_run(tmp_path / "a", [make_result(sent=1_000_000, received=990_000, socket_drops=20_000)])  # -10,000
    b = write_run(tmp_path / "b", [make_result(sent=1_000_000, received=990_000, socket_drops=10_000)])  # 0
    u = next(c for c in compare.compare(load_run(a), load_run(b)).changes if c.metric.name == "unexplained_pct")
    assert u.a.median == 1.0 and u.b.median == 0.0 and u.better


def test_a_change_from_almost_nothing_reads_as_a_factor(tmp_path):
    """Not "+1056088.0 %": a growth beyond 1,000 % is a factor."""
    a = write_run(tmp_path / "a", [make_result(sent=10_000_000, received=9_999_999, socket_drops=1)])
    b = write_run(tmp_path / "b", [make_result(sent=10_000_000, received=8_943_913, socket_drops=1_056_087)])
    loss = next(c for c in compare.compare(load_run(a), load_run(b)).changes if c.metric.name == "loss_pct")
    assert loss.rel_pct == pytest.approx(105_608_600.0)
    assert compare_out.fmt_change(loss) == "+10.56 pts (×1,056,087)"
    c = write_run(tmp_path / "c", [make_result(sent=10_000_000, received=9_990_000, socket_drops=10_000)])
    d = write_run(tmp_path / "d", [make_result(sent=10_000_000, received=9_940_000, socket_drops=60_000)])
    loss = next(c for c in compare.compare(load_run(c), load_run(d)).changes if c.metric.name == "loss_pct")
    assert compare_out.fmt_change(loss) == "+0.50 pts (+500.0 %)"
    e = write_run(tmp_path / "e", [make_result(sent=10_000_000, received=9_880_000, socket_drops=120_000)])
    loss = next(c for c in compare.compare(load_run(c), load_run(e)).changes if c.metric.name == "loss_pct")
    assert compare_out.fmt_change(loss) == "+1.10 pts (×12.0)"


def search_run(tmp_path, src, name):
    """A run of searches only: the iperf trials of a stored campaign left out."""
    return run_copy(tmp_path, src, keep=lambda r: r["method"] != "iperf", name=name)


def test_searches_are_compared_by_their_answers_not_their_trials(tmp_path):
    """Defect: trials of searches were matched by the rates they happened to visit ("14 only in A,
    14 only in B") and the answers were never compared."""
    a, b = load_run(search_run(tmp_path, SEARCHES_A, "a")), load_run(search_run(tmp_path, SEARCHES_B, "b"))
    cmp = compare.compare(a, b)
    assert cmp.only_a == [] and cmp.only_b == []
    assert all(c.answer and c.key.rate == "" for c in cmp.changes)  # no single search trial is matched
    rfc = {(c.key.series.backend, c.key.series.placement.split()[0], c.key.frame_len): c
           for c in cmp.changes if c.metric.name == "rfc2544_pps"}
    expected_a, expected_b = recorded(SEARCHES_A), recorded(SEARCHES_B)
    assert set(rfc) == set(expected_a)
    for key, c in rfc.items():
        assert (c.a.median, c.b.median) == (expected_a[key], expected_b[key])
        assert c.a.n == c.b.n == 2 and c.by_repetitions
    # B's pcap is 40 % slower (27 % at 1518 B, where A reached the wire rate): worse beyond the noise
    for size in (64, 512, 1518):
        for pin in ("A:A", "A:B"):
            c = rfc["pcap", pin, size]
            assert c.significant and c.worse and c.rel_pct < -25
    # afp-v3 is the same path: a change within the search's precision is not marked
    assert not any(c.significant for key, c in rfc.items() if key[0] == "afp-v3")
    wobble = rfc["afp-v3", "A:A", 64]
    assert 0 < abs(wobble.delta) <= wobble.precision and compare_out.verdict(wobble) == "within the search's precision"
    names = {c.metric.name for c in cmp.changes}
    assert names == {"rfc2544_pps", "mlr_NDR_pps", "mlr_PDR_pps", "sweep_lossless_pps"}
    # MLR ran once in each run: no noise estimate, not judged (--threshold would)
    mlr = [c for c in cmp.changes if c.metric.name.startswith("mlr_")]
    assert mlr and not any(c.judged for c in mlr) and {compare_out.verdict(c) for c in mlr} == {compare_out.NOT_JUDGED}
    with_threshold = compare.compare(a, b, threshold_pct=5)
    assert {c.metric.name for c in with_threshold.regressions(20)} == names
    sweep = next(c for c in cmp.changes if c.metric.name == "sweep_lossless_pps" and c.key.series.backend == "pcap")
    assert sweep.worse and sweep.significant
    lines = compare_out.headline(cmp)
    assert "16 search steps (compared by their answers) in common." in lines[0]
    assert "only in" not in lines[0]
    # --fail-on-regression watches the answers
    worse = cmp.regressions(20)
    assert {c.metric.name for c in worse} == {"rfc2544_pps", "sweep_lossless_pps"}
    assert all(c.key.series.backend == "pcap" for c in worse)
    p = capbench("compare", str(a.path), str(b.path), "--fail-on-regression", "20", "--out", str(tmp_path / "o"))
    assert p.returncode == 1, p.stderr
    assert f"{len(worse)} figures worse by more than 20 %" in p.stderr and "RFC 2544 throughput of rfc2544, pcap" in p.stderr
    md = (tmp_path / "o" / "compare.md").read_text()
    assert "| pcap rfc2544 A:A 64 B | RFC 2544 throughput [pps] | 279,018 | 162,760 | -116,257 pps (-41.7 %) | worse |" in md
    assert "search answers" in svg_texts(tmp_path / "o" / "compare.svg")
    assert capbench("compare", str(a.path), str(b.path), "--fail-on-regression", "100",  # pcap's sweep: -100 %
                    "--out", str(tmp_path / "o2")).returncode == 0


def test_a_run_of_searches_against_itself_changes_nothing(tmp_path):
    a = load_run(search_run(tmp_path, SEARCHES_A, "a"))
    cmp = compare.compare(a, a)
    assert cmp.changes and all(c.delta == 0 and not c.significant for c in cmp.changes)
    assert cmp.regressions(0) == []
    assert "No change: every figure compared is the same in both runs." in compare_out.headline(cmp)


def test_iperf_trials_and_answers_of_one_campaign(tmp_path):
    """iperf trials are matched trial by trial as before; the searches of the same runs by their answers."""
    cmp = compare.compare(load_run(SEARCHES_A), load_run(SEARCHES_B))
    iperf = [c for c in cmp.changes if not c.answer]
    assert {c.key.series.method for c in iperf} == {"iperf"} and len(cmp.measurements) == 12
    assert "12 measurements and 16 search steps (compared by their answers) in common." in compare_out.headline(cmp)[0]


def test_a_search_without_an_answer_is_named(tmp_path):
    a = load_run(search_run(tmp_path, SEARCHES_A, "a"))
    # B's pcap 64 B A:A searches were cut short before their verification passed (no searches.jsonl)
    b_path = run_copy(tmp_path, SEARCHES_A, name="b", searches=False,
                      keep=lambda r: r["method"] == "rfc2544" and not (r["step"].startswith("rfc2544|pcap|64|pin=A:A")
                                                                     and r["purpose"] == "verify"))
    cmp = compare.compare(a, load_run(b_path))
    assert [(k.series.backend, k.frame_len, n, w) for k, n, w in cmp.unanswered] == [("pcap", 64, "rfc2544_pps", "B")]
    assert any("No answer to compare" in line and "pcap" in line for line in compare_out.headline(cmp))
