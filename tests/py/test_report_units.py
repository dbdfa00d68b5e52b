"""Figures that read at a glance: the unit of each axis chosen for its range, no offset or
scientific notation, one meaning per marker, loss bars no taller than their loss, and a
compact report.html."""

import re
import shutil

import pytest
from capbench.report import plots, units
from capbench.report.load import load_run
from capbench.report.writer import write_report
from matplotlib.backends.backend_agg import FigureCanvasAgg
from capbench.report import tables_md
from capbench.report.html import esc, flat_items
from report_files import DEFAULT_RUN, FIXTURE, axis_unit, copy_fixture, trial

FIXTURES = FIXTURE.parent
RUNS = [FIXTURES / name for name in ("run-iperf", "run-searches-a", "run-searches-b", "run-profile")]


@pytest.mark.parametrize(("quantity", "values", "name"), [
    ("pps", [1_488_095, 81_274], "Mpps"),
    ("pps", [999_999], "kpps"),
    ("pps", [812.5], "pps"),
    ("pps", [], "pps"),
    ("bps", [0.99e9], "Mbps"),
    ("bps", [1e9, -2e9], "Gbps"),
    ("pct", [43.8, 0.0], "%"),
    ("pct", [0.01], "%"),
    ("pct", [0.0099], "ppm"),  # 99 ppm, not "0.0099 %"
    ("pct", [1e-6], "ppm"),
    ("ns", [1_555], "µs"),
    ("ns", [999], "ns"),
    ("ns", [3.2e6], "ms"),
])
def test_the_unit_is_the_largest_the_values_reach(quantity, values, name):
    assert units.pick(quantity, values).name == name


@pytest.mark.parametrize(("values", "name"), [
    ([10_000, 12_000, 3e6], "µs"),  # the median, 12 µs, reads "12"; not "0.012 ms" for the 3 ms
    ([800, 900, 2_000_000], "ns"),
    ([2e6, 3e6, 5_000], "ms"),
    ([], "ns"),
])
def test_a_log_axis_takes_the_unit_of_its_typical_value(values, name):
    assert units.pick_typical("ns", values).name == name


@pytest.mark.parametrize(("value", "text"), [(0.01, "0.01"), (0.5, "0.5"), (1, "1"), (10, "10"), (100_000, "100,000"),
                                             (1e6, "1,000,000"), (0, "0")])
def test_a_log_tick_has_no_exponent(value, text):
    assert units.plain(value) == text


def test_latency_reads_in_the_unit_of_a_typical_p50():
    # p50 of 10-20 µs, max of 90 ms: the axis in µs, its ticks whole numbers, not "0.01 ms"
    trials = [trial("latency", {"latency": {"p50_ns": 10_000 * k, "p99_ns": 400_000 * k, "max_ns": 9e7}},
                    backend="afp-v3", sent=100_000 * k) for k in (1, 2)]
    fig = plots.latency_fig(trials).figure
    FigureCanvasAgg(fig).draw()
    assert fig.axes[0].get_ylabel() == "latency [µs]"
    ticks = [t.get_text() for t in fig.axes[0].yaxis.get_ticklabels() if t.get_text()]
    assert {"10", "100", "1,000", "100,000"} <= set(ticks), ticks
    assert not any("." in t or "e" in t for t in ticks), ticks


def test_a_unit_converts_and_labels():
    mpps = units.pick("pps", [1_488_095])
    assert mpps.of(1_488_095) == pytest.approx(1.488095)
    assert units.label("captured", mpps) == "captured [Mpps]"
    assert units.label("lost", units.pick("pct", [1e-3]), "of sent") == "lost [ppm of sent]"
    assert units.pick("pct", [1e-3]).of(1e-3) == pytest.approx(10.0)  # 0.001 % = 10 ppm


def drawn_figures(trials):
    for spec in plots.FIGURES:
        d = spec.draw(trials, None)
        if isinstance(d, plots.Drawn):
            FigureCanvasAgg(d.figure).draw()  # the tick labels and offsets exist once drawn
            yield spec.name, d.figure


def tiny_and_close_trials():
    """What made matplotlib write "1e−6 %" and "+1.488e6": a loss of 1 in 100 million frames and
    captured rates that differ in their last digits."""
    return [trial(backend=b, frame_len=64, sent=100_000_000, received=100_000_000 - lost, rx_pps=1_488_000 + d,
                  rx_gbps=0.999_9 + d * 1e-7)
            for b, lost, d in (("pcap", 1, 0), ("afp-v3", 2, 3))]


SCIENTIFIC = re.compile(r"\de[+\-−]?\d|×|10\^")


@pytest.mark.parametrize("source", RUNS + ["tiny"], ids=lambda p: getattr(p, "name", p))
def test_no_axis_has_an_offset_or_scientific_notation(source):
    trials = tiny_and_close_trials() if source == "tiny" else load_run(source).trials
    seen = 0
    for name, fig in drawn_figures(trials):
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                assert axis.get_offset_text().get_text() == "", (name, axis.get_offset_text().get_text())
                for tick in axis.get_ticklabels():
                    assert not SCIENTIFIC.search(tick.get_text()), (name, tick.get_text())
                    seen += 1
    assert seen > 20


def test_a_tiny_loss_is_in_ppm_and_the_close_rates_in_mpps():
    trials = tiny_and_close_trials()
    (ax,) = plots.loss_layers(trials).figure.axes
    assert ax.get_ylabel() == "lost [ppm of sent]"
    tp = plots.throughput(trials).figure
    assert axis_unit("pps", tp.axes[0].get_ylabel()).name == "Mpps"


def test_every_marker_drawn_is_one_declared_with_one_meaning():
    styles = [(m.style["marker"], m.style["markerfacecolor"] == "white") for m in plots.MARKERS.values()]
    assert len(set(styles)) == len(styles)  # no two kinds look alike
    meanings = [m.meaning for m in plots.MARKERS.values()]
    assert len(set(meanings)) == len(meanings)
    used = set()
    for run in RUNS:
        for name, fig in drawn_figures(load_run(run).trials):
            for ax in fig.axes:
                for line in ax.get_lines():
                    if line.get_marker() not in ("None", "", None, " ", "_"):  # "_": an error bar's caps
                        assert plots.kind_of(line) is not None, (run.name, name, line.get_marker())
            used |= plots.kinds_used(fig)
    assert {"measured", "lower_bound", "kernel"} <= used


def test_the_key_shows_each_marker_with_its_meaning():
    fig = plots.marker_key({"lower_bound", "measured"})
    (legend,) = fig.legends
    # in MARKERS' order, whatever order they are asked in
    assert [t.get_text() for t in legend.get_texts()] == [plots.MARKERS["measured"].meaning, plots.LOWER_BOUND_TEXT]
    assert [plots.kind_of(h) for h in legend.legend_handles] == ["measured", "lower_bound"]


def test_a_loss_bar_is_never_taller_than_its_loss():
    # The layers count 900 drops where 300 packets are missing (the counters disagree): the bar is the loss,
    # shared in the layers' proportions (1:2), not three times as tall.
    disagree = trial(backend="pcap", frame_len=64, sent=1_000_000, received=999_700, delivered=1_000_000,
                     backlog_drops=300, socket_drops=600)
    agree = trial(backend="afp-v3", frame_len=64, sent=1_000_000, received=999_000, delivered=999_500,
                  backlog_drops=200)
    assert disagree.result.unexplained == -600 and agree.result.unexplained == 300
    (ax,) = plots.loss_layers([disagree, agree]).figure.axes
    unit = axis_unit("pct", ax.get_ylabel())
    bars = {}
    for p in ax.patches:
        bars.setdefault(round(p.get_x() + p.get_width() / 2, 6), []).append(p)
    assert len(bars) == 2
    tops = sorted((max(p.get_y() + p.get_height() for p in ps), [p.get_height() for p in ps]) for ps in bars.values())
    (top_disagree, heights_disagree), (top_agree, _heights) = tops
    assert top_disagree * unit.factor == pytest.approx(0.03)  # 300 of 1,000,000: 0.03 %, not 0.09 %
    assert heights_disagree[1] == pytest.approx(2 * heights_disagree[0])  # backlog 300 : socket 600
    assert top_agree * unit.factor == pytest.approx(0.1)  # link 500 + backlog 200 + unexplained 300


def test_one_frame_length_has_an_axis_around_it():
    trials = [trial("rfc2544", backend="pcap", frame_len=64, sent=1_000_000, rate="200000pps", offered_pps=200_000,
                    purpose=purpose) for purpose in ("search", "verify")]
    ax = plots.rfc2544(trials).figure.axes[0]
    lo, hi = ax.get_xlim()
    assert lo <= 32 and hi >= 96  # not 61-67 B
    assert list(ax.get_xticks()) == [64]


def test_the_report_is_compact(tmp_path):
    rep = write_report(copy_fixture(tmp_path))
    page = rep.html.read_text()
    run_section = page.split("<h2>Run</h2>")[1].split("</section>")[0]
    assert "{" not in run_section and "matrices" not in run_section  # settings as a table, no JSON
    assert '<th class="text">sizes</th><td class="text">64, 512, 1518</td>' in run_section
    # the figures with no data: one line, each named, the reasons folded under it
    skipped = [f for f in rep.figures if f.skipped is not None]
    assert 'class="skipped"' in page and page.count('class="skipped"') == 1
    line = page.split('<summary>Not drawn (no data in this run): ')[1].split("</summary>")[0]
    assert line == ", ".join(f.title.replace("'", "&#x27;") for f in skipped)
    for f in skipped:
        assert f"<h3>{f.title}</h3>" not in page
    # the key of markers: exactly those the drawn figures use
    used = set().union(*(f.markers for f in rep.figures))
    key = page.split('<div class="key">')[1].split("</svg>")[0]
    for kind, m in plots.MARKERS.items():
        assert (m.meaning.replace("(", "(") in key) == (kind in used), kind
    assert used == {"measured", "lower_bound"}
    # the summary's table says in its Note in a few words what the sentence said in parentheses, and
    # the lines on where each backend starts to lose say once what a lower bound is
    best = page.split('<table class="summary">')[1].split("</table>")[0]
    assert '<td class="text">lower bound for pcap</td></tr>' in best
    assert "generator short of the offered load, nothing lost" in page.split("Where each backend starts to lose")[1]


def test_the_default_run_s_long_tables_are_folded_with_every_number_and_one_footnote(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DEFAULT_RUN, run)
    page = write_report(run).html.read_text()
    section = page.split("<h2>Tables</h2>")[1].split("</section>")[0]
    iperf = tables_md.iperf_tables(load_run(run).trials)
    assert [len(t.rows) for t in iperf] == [13, 13]  # pcap and afp-v3, every generator short of its load
    assert section.count('<details class="table">') == 2  # folded: each its title, opened on a click
    for t in iperf:
        assert f"<summary>{esc(t.title)} " in section
        for row in t.rows:  # every number of the table is in the page
            assert "".join(f"<td>{esc(c)}</td>" for c in row[:-1]) + f'<td class="text">{esc(row[-1])}</td></tr>' \
                in section, row
            assert row[-1].startswith("the generator could not hold ") and row[-1].endswith(" pps"), row
        (note,) = t.notes  # what `*` means: under the table, once
        assert note.startswith(tables_md.SHORT_MARK + " the generator did not hold the offered load")
    assert section.count(esc(iperf[0].notes[0])) == 2
    # the summary: the best backend per frame length as a table (its figures in columns, no empty Note)
    best = page.split('<table class="summary">')[1].split("</table>")[0]
    assert best.count("<tr>") == 14 and "<th" in best and ">Note<" not in best
    assert "<td>64</td><td class=\"text\">afp-v3</td><td>1,236,402 / 0.831</td><td>2.72 %</td><td>1</td>" \
           "<td>3.1 / 75.8</td><td>1,271,015 of 1,488,095</td>" in best  # Trials: measured once
    assert "its loss is capture loss" not in "".join(c for t in iperf for row in t.rows for c in row)


def test_the_settings_of_many_matrices_say_once_what_they_share():
    # a tune's campaign: tens of matrices alike but for their knobs
    matrices = [{"methods": ["mlr"], "sizes": [64], "vary": vary} for vary in (["ring", "4M"], ["ring", "16M"])]
    rows = dict(flat_items([("campaign", {"name": "capbench tune", "matrices": matrices})]))
    assert rows == {"name": "capbench tune", "every matrix · methods": ["mlr"], "every matrix · sizes": [64],
                    "matrix 1 · vary": ["ring", "4M"], "matrix 2 · vary": ["ring", "16M"]}
    one = dict(flat_items([("campaign", {"matrices": matrices[:1]})]))
    assert one == {"methods": ["mlr"], "sizes": [64], "vary": ["ring", "4M"]}
