"""`capbench compare A B`: matching, direction, noise, regressions and bad input."""

import xml.etree.ElementTree as ET

import pytest
from capbench.report import compare, compare_out
from capbench.report.load import load_run
from report_files import FIXTURE, assert_png, scaled_copy, svg_texts, write_run
from records import make_result
from test_cli import assert_usage_error, capbench


def test_a_run_against_itself_changes_nothing(tmp_path):
    out = tmp_path / "cmp"
    p = capbench("compare", str(FIXTURE), str(FIXTURE), "--fail-on-regression", "10", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "No change larger than the noise." in p.stdout
    assert "no noise estimate exists" in p.stdout and "5 %" in p.stdout
    assert "worse" not in p.stdout.split("Verdict")[1].split("A = ")[0]
    assert_png(out / "compare.png")
    assert "afp-v3 512 B" in svg_texts(out / "compare.svg")
    page = (out / "compare.html").read_text()
    assert "<svg" in page and "http://" not in page.split("<svg")[0]
    assert "| afp-v3 512 B | captured [pps] | 234,962 | 234,962 | 0 | no change |" in (out / "compare.md").read_text()


def test_a_slower_backend_is_worse_and_fails_the_regression_check(tmp_path):
    slow = scaled_copy(FIXTURE, tmp_path / "slow", "afp-v3", 0.7)
    cmp = compare.compare(load_run(FIXTURE), load_run(slow))
    worse = [c for c in cmp.changes if c.significant]
    assert {(c.key.series.backend, c.key.frame_len, c.metric.name) for c in worse} == {
        ("afp-v3", 512, "rx_pps"), ("afp-v3", 1518, "rx_pps")}  # 64 B: the generator fell short, not judged
    assert all(c.worse and c.rel_pct == pytest.approx(-30.0) for c in worse)
    assert cmp.regressions(10) == worse and cmp.regressions(40) == []

    p = capbench("compare", str(FIXTURE), str(slow), "--fail-on-regression", "10")
    assert p.returncode == 1, p.stderr
    assert "2 figures worse by more than 10 %" in p.stderr and "(-30.0 %)" in p.stderr
    assert (slow / "report" / "compare-run-iperf" / "compare.html").exists()
    assert capbench("compare", str(FIXTURE), str(slow)).returncode == 0  # no check asked for
    assert capbench("compare", str(FIXTURE), str(slow), "--fail-on-regression", "40").returncode == 0
    back = capbench("compare", str(slow), str(FIXTURE), "--fail-on-regression", "10", "--out", str(tmp_path / "b"))
    assert back.returncode == 0 and "better" in back.stdout


def reps(tmp_path, name, received):
    return write_run(tmp_path / name, [make_result(backend="afp-v3", sent=1_000_000, received=r) for r in received])


def test_with_repetitions_the_noise_is_their_spread(tmp_path):
    a = load_run(reps(tmp_path, "a", [990_000, 1_000_000, 980_000]))
    same = load_run(reps(tmp_path, "same", [985_000, 995_000, 975_000]))  # overlaps A's range
    worse = load_run(reps(tmp_path, "worse", [900_000, 910_000, 905_000]))
    within = compare.compare(a, same)
    assert "min–max ranges of the repetitions" in within.noise_rule()
    rx = next(c for c in within.changes if c.metric.name == "rx_pps")
    assert rx.by_repetitions and not rx.significant and rx.worse
    assert within.regressions(0.1) == []  # worse, but within the noise
    assert compare_out.fmt_value(rx, "a") == "198,000 (196,000–200,000)"  # median (min–max) per 5 s
    beyond = compare.compare(a, worse)
    assert [c.metric.name for c in beyond.regressions(5)] == ["rx_pps", "loss_pct"]


def test_loss_where_there_was_none_is_a_regression(tmp_path):
    a = write_run(tmp_path / "a", [make_result(backend="pcap", sent=10_000_000)])
    b = write_run(tmp_path / "b", [make_result(backend="pcap", sent=10_000_000, received=9_999_999, socket_drops=1)])
    cmp = compare.compare(load_run(a), load_run(b))
    loss = next(c for c in cmp.changes if c.metric.name == "loss_pct")
    assert loss.rel_pct is None and loss.worse and loss.significant
    assert compare_out.fmt_change(loss) == "+0.000010 pts (from 0)"
    assert capbench("compare", str(a), str(b), "--fail-on-regression", "50").returncode == 1


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
    files = compare_out.write(compare.compare(load_run(FIXTURE), load_run(slow)), tmp_path / "out")
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
