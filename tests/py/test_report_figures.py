"""Every figure, drawn from the stored run or from synthetic records of the methods to come."""

import html
import re
import xml.etree.ElementTree as ET

import pytest
from capbench.rates import wire_pps
from capbench.report import answers, plots, stats
from capbench.report.load import load_run
from capbench.report.writer import write_report
from report_files import FIXTURE, assert_png, axis_unit, copy_fixture, svg_texts, trial

DRAWN_FROM_FIXTURE = {"throughput", "load", "loss_layers"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return write_report(copy_fixture(tmp_path_factory.mktemp("report")))


def test_fixture_figures_exist_as_png_and_svg(report):
    drawn = {f.name: f for f in report.figures if f.skipped is None}
    assert set(drawn) == DRAWN_FROM_FIXTURE
    for f in drawn.values():
        assert f.png == report.dir / f"{f.name}.png" and f.svg == report.dir / f"{f.name}.svg"
        assert_png(f.png)
        texts = " ".join(svg_texts(f.svg))
        assert "pcap" in texts and "afp-v3" in texts, (f.name, texts[:300])


def test_throughput_draws_the_wire_rate_and_marks_lower_bounds(report):
    texts = svg_texts(report.dir / "throughput.svg")
    assert "wire rate (1g)" in texts
    # pcap's generator fell short at every length, but it lost frames at 64 and 1518 B: a line
    # through those; 512 B lost nothing: an open marker, a lower bound
    assert "pcap" in texts and "pcap (lower bound)" not in texts
    assert "lower_bound" in plots.kinds_used(plots.throughput(load_run(report.run.path).trials).figure)
    assert "captured [Mpps]" in texts and "captured [Gbps on the wire]" in texts  # units for the range


def test_loss_layers_show_a_short_generator_s_loss_and_no_bar_for_a_lower_bound(report):
    texts = " ".join(svg_texts(report.dir / "loss_layers.svg"))
    assert "pcap: lower bound" in texts and "afp-v3: lower bound" not in texts  # pcap 512 B lost nothing
    assert "pcap: 21.35 %" in texts  # pcap's 64 B loss: capture loss at the rate the generator sent
    for layer in ("link", "backlog", "socket", "unexplained"):
        assert layer in texts


def test_figures_without_records_are_skipped_with_a_reason(report):
    skipped = {f.name: f.skipped for f in report.figures if f.skipped is not None}
    assert set(skipped) == {"rfc2544", "mlr", "sweep", "repetitions", "loss_groups", "latency", "cpu_time"}
    assert "--method rfc2544" in skipped["rfc2544"]
    assert "--profile" in skipped["cpu_time"]
    assert "--repeat" in skipped["repetitions"]
    page = report.html.read_text()
    for reason in skipped.values():
        assert html.escape(reason) in page


def draw_and_check(tmp_path, spec_name, trials, *labels):
    """Draw one figure, save it, check both files and that the SVG names every label."""
    spec = next(s for s in plots.FIGURES if s.name == spec_name)
    drawn = spec.draw(trials)
    assert isinstance(drawn, plots.Drawn), drawn
    png, svg = plots.save(drawn.figure, tmp_path / spec_name)
    assert_png(png)
    texts = " ".join(svg_texts(svg))
    for label in labels:
        assert label in texts, (label, texts[:400])
    return texts


def test_repetitions_draw_error_bars_and_spread(tmp_path):
    trials = [trial(backend=b, frame_len=size, received=7_440_476 - k * 1000)
              for b in ("pcap", "afp-v3") for size in (64, 1518) for k in range(3)]
    draw_and_check(tmp_path, "repetitions", trials, "pcap (n = 3)", "afp-v3 (n = 3)")
    texts = draw_and_check(tmp_path, "throughput", trials, "pcap", "afp-v3")
    assert "wire rate (1g)" in texts


def test_rfc2544_throughput_is_the_highest_rate_whose_verification_passed(tmp_path):
    trials = []
    for b, limit in (("pcap", 400_000), ("afp-v3", 900_000)):
        for rate, purpose in ((1_488_095, "search"), (744_047, "search"), (372_023, "search"), (558_035, "search"),
                              (744_047 if limit > 744_047 else 372_023, "verify")):
            sent = rate * 5
            received = sent if rate <= limit else sent - 10
            trials.append(trial("rfc2544", backend=b, frame_len=64, sent=sent, received=received,
                                rate=f"{rate}pps", offered_pps=rate, purpose=purpose))
    # afp-v3 at 512 B: the pass at 117,481 pps failed its verification, 58,741 pps passed its own
    for rate, lost, purpose in ((234_962, 50, "search"), (117_481, 0, "search"), (117_481, 5, "verify"),
                                (58_741, 0, "search"), (58_741, 0, "verify")):
        trials.append(trial("rfc2544", backend="afp-v3", frame_len=512, sent=rate * 5, received=rate * 5 - lost,
                            rate=f"{rate}pps", offered_pps=rate, purpose=purpose))
    draw_and_check(tmp_path, "rfc2544", trials, "pcap", "afp-v3", "wire rate (1g)")
    drawn = plots.rfc2544(trials)
    lines = {c.get_label(): c.lines[0] for c in drawn.figure.axes[0].containers}
    k = axis_unit("pps", drawn.figure.axes[0].get_ylabel()).factor
    assert k == 1e6  # the wire rate at 64 B, 1,488,095 pps, is the largest value: Mpps
    assert [y * k for y in lines["pcap"].get_ydata()] == pytest.approx([372_023])
    # two backends at a few lengths: side by side around each length (plots._dodge), afp-v3 left of it
    left = min(plots._dodge(["afp-v3", "pcap"], [64, 512]).values())  # two series, afp-v3 first
    assert list(lines["afp-v3"].get_xdata()) == [64 + left, 512 + left]
    assert [y * k for y in lines["afp-v3"].get_ydata()] == pytest.approx([744_047, 58_741])
    found = {(a.series.backend, a.frame_len): a.values["rfc2544_pps"] for a in answers.answers_of(trials)}
    assert found == {("pcap", 64): 372_023, ("afp-v3", 64): 744_047, ("afp-v3", 512): 58_741}


def test_sweep_draws_capture_rate_and_cpu_against_offered_rate(tmp_path):
    trials = [trial("sweep", backend=b, frame_len=64, sent=int(rate * 5), received=int(rate * 5 * 0.99),
                    rate=f"{rate:.0f}pps", offered_pps=rate)
              for b in ("pcap", "afp-v3") for rate in (wire_pps(1e9, 64) * s for s in (0.25, 0.5, 0.75, 1.0))]
    draw_and_check(tmp_path, "sweep", trials, "pcap 64 B", "afp-v3 64 B kernel", "everything captured")


def grouped(backend="afp-v3", sent=1050, received=(), **kw):
    """A trial of a grouped stream: groups of 100 frames, the counter's frames per group."""
    return trial(backend=backend, frame_len=64, sent=sent, received=sum(received), socket_drops=sent - sum(received),
                 group_size=100, group_received=tuple(received), **kw)


def test_group_losses_count_the_partial_last_group_and_the_groups_that_never_came():
    # 1,050 frames: 10 groups of 100 and a last one of 50, of which 45 arrived
    r = grouped(received=[100] * 5 + [97, 100, 90, 100, 100, 45]).result
    assert stats.group_losses(r) == [0] * 5 + [3, 0, 10, 0, 0, 5]
    # the counter lists groups up to the highest it saw: the last two never arrived
    assert stats.group_losses(grouped(sent=1000, received=[100] * 8).result) == [0] * 8 + [100, 100]
    # a counter that reads no sequence numbers (app load none) counts no group: no figure
    assert stats.group_losses(trial(sent=1000, group_size=100, group_received=(0,) * 10).result) is None
    # nothing arrived at all: every group lost whole
    assert stats.group_losses(grouped(sent=250, received=[0, 0, 0]).result) == [100, 100, 50]
    assert stats.group_losses(trial(sent=1000).result) is None  # no groups sent


def test_loss_per_group_histogram(tmp_path):
    """Seed 004: the groups of a grouped stream, by frames lost; not each trial as one group."""
    trials = [grouped(received=[100] * 5 + [97, 100, 90, 100, 100, 45]),
              grouped(sent=1000, received=[100] * 8),
              grouped(sent=1000, received=[100] * 10, invalid_offered_load=True),  # lower bound: left out
              trial(backend="pcap", sent=1000, group_size=100, group_received=(0,) * 10)]  # counted no group
    texts = draw_and_check(tmp_path, "loss_groups", trials, "afp-v3: 21 groups of 100 frames, 5 lossy (2 trials)")
    assert "1–9" in texts and "10–99" in texts and "100–999" not in texts and "pcap" not in texts
    assert " 100 " in f" {texts} "  # the last bin: a group of 100 frames loses at most 100
    drawn = plots.loss_groups(trials)
    assert [p.get_height() for p in drawn.figure.axes[0].patches] == [16, 2, 1, 2]
    assert "1 trial left out: lower bound (generator short, nothing lost)." in drawn.caption
    assert "1 trial whose counter counted no group" in drawn.caption
    skipped = plots.loss_groups([trial(backend="afp-v3", received=7_440_476 - lost) for lost in range(9)])
    assert isinstance(skipped, plots.Skipped) and "no trial sent a grouped stream" in skipped.reason


def test_latency_percentiles(tmp_path):
    trials = [trial("latency", {"latency": {"p50_ns": 20_000 * k, "p99_ns": 90_000 * k, "max_ns": 1e6}},
                    backend="afp-v3", sent=100_000 * k) for k in (1, 2, 3)]
    texts = draw_and_check(tmp_path, "latency", trials, "afp-v3", "p50", "p99", "max")
    assert "p90" not in texts  # three panels, whatever else the record holds


def test_latency_marks_the_answer_and_the_lossy_search_trials():
    lat = {"latency": {"p50_ns": 20_000, "p99_ns": 90_000}}
    trials = [trial("latency", lat, backend="afp-v3", sent=100_000 * k, received=100_000 * k - lost,
                    purpose=purpose)
              for k, lost, purpose in ((1, 0, "search"), (3, 500, "search"), (2, 0, "latency at throughput"))]
    trials.append(trial("latency", {"latency": {}}, backend="afp-v3"))  # the counter measured none: left out
    drawn = plots.latency_fig(trials)
    assert isinstance(drawn, plots.Drawn)
    assert "the latency method's trials, its search trials included (3 trials)" in drawn.caption
    # An iperf trial of the same run is left out when the latency method's trials are there.
    iperf = trial("iperf", lat, backend="pcap")
    assert "(3 trials)" in plots.latency_fig([*trials, iperf]).caption
    only_iperf = plots.latency_fig([iperf])
    assert "no latency method in this run) (1 trial)" in only_iperf.caption
    assert "Stars (1)" in drawn.caption and "Crosses (1)" in drawn.caption
    assert plots.kinds_used(drawn.figure) == {"measured", "answer", "lost_frames"}


def test_placements_get_their_seed_names(tmp_path):
    trials = [trial(backend="pcap", frame_len=size, cap_cpu=cap, kernel_rx_cpu=1)
              for size in (64, 1518) for cap in (0, 1)]
    draw_and_check(tmp_path, "throughput", trials, "pcap A:A", "pcap A:B")


def test_the_fixture_is_a_real_run():
    run = load_run(FIXTURE)
    assert run.meta["settings"]["sizes"] == [64, 512, 1518]
    assert {t.result.backend for t in run.trials} == {"pcap", "afp-v3"}
    assert all(t.result.raw for t in run.trials)


def test_report_html_is_self_contained(report):
    page = report.html.read_text()
    assert page.count("<svg") == len(DRAWN_FROM_FIXTURE) + 1  # and the markers' key
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert links and all(link.startswith("#") for link in links), links  # only the SVGs' own markers
    ids = re.findall(r"""\bid=["']([^"']+)""", page)
    assert len(ids) == len(set(ids))  # the inlined SVGs share one document: their ids must not collide
    assert "<!DOCTYPE svg" not in page  # the SVG prolog names an external DTD
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        ET.fromstring(svg)
    for words in ("AMD EPYC", "6.18.44", "b4b5fab555a7db4a0259f2e7e8c8e5d01641e4b6", "net.core.netdev_max_backlog",
                  "Best backend per frame length", "not a capture result", 'class="short"'):
        assert words in page, words


def test_sweep_marks_steps_the_generator_did_not_reach(tmp_path):
    trials = [trial("sweep", backend="afp-v3", frame_len=64, sent=int(rate * 5), rate=f"{rate:.0f}pps",
                    offered_pps=rate, invalid_offered_load=rate > 1e6)
              for rate in (wire_pps(1e9, 64) * s for s in (0.25, 0.5, 0.75, 1.0))]
    draw_and_check(tmp_path, "sweep", trials, "afp-v3 64 B", "captured [Mpps]", "[Mpps]")
    assert "lower_bound" in plots.kinds_used(plots.sweep(trials).figure)


SEARCHES = FIXTURE.parent / "run-searches-a"  # iperf, rfc2544, mlr and sweep steps, repeated (simulated)


def test_figures_of_a_campaign_of_methods(tmp_path):
    report = write_report(copy_fixture_from(SEARCHES, tmp_path))
    drawn = {f.name for f in report.figures if f.skipped is None}
    assert drawn == {"throughput", "load", "loss_layers", "rfc2544", "mlr", "sweep", "repetitions"}
    for name in drawn:
        assert_png(report.dir / f"{name}.png")
    assert {"pcap A:A", "afp-v3 A:B", "wire rate (1g)"} <= set(svg_texts(report.dir / "rfc2544.svg"))
    # the spread of repetitions: the iperf-like measurements only, never a search's trials
    texts = svg_texts(report.dir / "repetitions.svg")
    assert {"pcap A:A (n = 2)", "afp-v3 A:B (n = 2)"} <= set(texts) and not any("n = 1" in t for t in texts)
    run = load_run(SEARCHES)
    spread = plots.repetitions(run.trials)
    xs = sorted(x for c in spread.figure.axes[0].containers for x in c.lines[0].get_xdata())
    assert len(xs) == 12  # 3 frame lengths x 2 backends x 2 placements, each run twice
    # side by side around each length (plots._dodge), within 30 % of the gap to the next length either way
    lengths = (64, 512, 1518)
    assert all(min(abs(x - n) for n in lengths) <= 0.3 * (512 - 64) for x in xs)
    assert len({round(x, 3) for x in xs}) == 12  # no two series on one x
    sweep_texts = svg_texts(report.dir / "sweep.svg")
    assert "pcap 64 B" in sweep_texts and "afp-v3 64 B kernel" in sweep_texts


def copy_fixture_from(src, dest):
    import shutil

    run = dest / "run"
    shutil.copytree(src, run)
    return run


def _labels(ax) -> list[str]:
    """The series an axis draws (errorbar containers carry the labels)."""
    return ax.get_legend_handles_labels()[1]


def test_load_leaves_out_a_kernel_load_nobody_measured_and_says_so(tmp_path):
    """A remote sensor's or a port's kernel load is None (not measured): no NaN point, no 0, a caption."""
    trials = [trial(backend=b, frame_len=size, received=400_000, kernel_cpu_pct=None if b == "pcap" else 30.0)
              for b in ("pcap", "afp-v3") for size in (64, 1518)]
    drawn = plots.load(trials)
    assert isinstance(drawn, plots.Drawn), drawn
    assert _labels(drawn.figure.axes[0]) == ["pcap", "afp-v3"]
    assert _labels(drawn.figure.axes[1]) == ["afp-v3"]  # pcap's kernel load: no line at all
    for ax in drawn.figure.axes:
        for ln in ax.lines:
            assert not any(y != y for y in ln.get_ydata()), (ln.get_label(), list(ln.get_ydata()))  # no NaN
    assert "Kernel receive load was not measured for pcap at 64 B, pcap at 1518 B" in drawn.caption
    assert "left out" in drawn.caption
    assert "not measured" not in plots.load([t for t in trials if t.result.backend == "afp-v3"]).caption
    draw_and_check(tmp_path, "load", trials, "pcap", "afp-v3")


def test_sweep_leaves_out_an_unmeasured_kernel_load_and_says_so():
    trials = [trial("sweep", backend="pcap", frame_len=64, sent=int(rate * 5), received=int(rate * 5 * 0.99),
                    rate=f"{rate:.0f}pps", offered_pps=rate, kernel_cpu_pct=None)
              for rate in (wire_pps(1e9, 64) * s for s in (0.25, 0.5, 1.0))]
    drawn = plots.sweep(trials)
    labels = _labels(drawn.figure.axes[1])
    assert "pcap 64 B app" in labels and "pcap 64 B kernel" not in labels
    assert "Kernel load was not measured for pcap 64 B at " in drawn.caption and "left out" in drawn.caption
