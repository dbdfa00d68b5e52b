"""The report of a profiled run (--profile): the figure of where the receive CPU's time goes, the flame
graph of each trial, the section of report.html, tables.md and tables.txt, and compare; drawn from
two real runs (tests/py/fixtures/make_profile_runs.py says how they were made)."""

import dataclasses
import html
import json
import re
import shutil
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from capbench.errors import UsageError
from capbench.profile import groups
from capbench.report import compare, compare_out, flamegraph, plots, profiles
from capbench.report.load import Trial, load_run
from capbench.report.writer import write_report
from report_files import FIXTURE as UNPROFILED
from report_files import assert_png, axis_unit, svg_texts
from test_cli import capbench

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PLAIN, SPIN = FIXTURES / "run-profile", FIXTURES / "run-profile-spin"
FOLDED = {p.name: p for p in (PLAIN / "profiles").glob("*.folded")}


def records(run: Path) -> dict[tuple[str, int], dict]:
    out = {}
    for line in (run / "trials.jsonl").read_text().splitlines():
        r = json.loads(line)
        out[r["backend"], r["frame_len"]] = r
    return out


def copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def rewrite(run: Path, change) -> None:
    """Each record of `run` as change(record) makes it."""
    lines = [json.dumps(change(json.loads(x))) for x in (run / "trials.jsonl").read_text().splitlines()]
    (run / "trials.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return write_report(copy(PLAIN, tmp_path_factory.mktemp("profile") / "run"))


# --- the figure ----------------------------------------------------------------------------


def test_the_figure_stacks_the_receive_cpu_s_groups_in_the_table_s_order(tmp_path):
    drawn = plots.cpu_time(load_run(PLAIN).trials)
    assert isinstance(drawn, plots.Drawn)
    ax_pct, ax_ns = drawn.figure.axes
    table = groups.table()
    # one stacked bar segment per group, in groups.toml's order, then the time no sample covers
    unsampled = table.by_kind(groups.UNSAMPLED).name
    expected = [table.label(g) for g in table.names() if g != unsampled] + [table.label(unsampled)]
    assert [c.get_label() for c in ax_pct.containers] == expected
    labels = [t.get_text() for t in ax_pct.get_yticklabels()]
    assert labels == ["pcap 1518 B", "afp-v3 1518 B", "afxdp 1518 B", "xdp 64 B"]  # the order the trials ran
    rec = records(PLAIN)["pcap", 1518]["profile"]["roles"]["receive"]
    # The receive CPU idled, and this VM's idle vCPU takes no sample: most of its time is unsampled.
    assert rec["groups_pct"][unsampled] > 80
    for i, g in enumerate(g for g in table.names() if g != unsampled):
        bar = ax_pct.containers[i][0]
        assert bar.get_width() == pytest.approx(rec["groups_pct"].get(g, 0.0)), g  # older records: no others
        assert bar.get_facecolor() == pytest.approx(plots.matplotlib.colors.to_rgba(table.color(g)))
    assert ax_pct.containers[-1][0].get_width() == pytest.approx(rec["groups_pct"][unsampled])
    # ns per captured packet: the groups but others, idle and unsampled add up to its busy time per packet
    assert len(ax_ns.containers) == len(table.busy_names())
    unit = axis_unit("ns", ax_ns.get_xlabel())
    assert unit.name == "µs"  # 1,555 ns per packet
    total = sum(c[0].get_width() for c in ax_ns.containers)
    assert total * unit.factor == pytest.approx(rec["ns_per_packet"], rel=1e-3)
    png, svg = plots.save(drawn.figure, tmp_path / "cpu_time")
    assert_png(png)
    texts = " ".join(svg_texts(svg))
    for text in ("Where the receive CPU's time goes", "[%]", "[µs]", "xdp 64 B", table.label("buffers"),
                 groups.table().label(groups.table().by_kind(groups.UNSAMPLED).name),
                 f"{rec['ns_per_packet'] / 1e3:.3g}"):
        assert text in texts, text
    assert "A:A" in drawn.caption and "groups.toml" in drawn.caption


def test_with_repetitions_a_bar_is_their_mean():
    run = load_run(PLAIN)
    first = run.trials[0]
    rec = first.result.profile
    other = json.loads(json.dumps(rec))
    receive = other["roles"]["receive"]
    receive["groups_pct"] = {g: 0.0 for g in receive["groups_pct"]} | {"app": 100.0}  # all sampled, all app
    receive["groups_ns_per_packet"] = {g: 0.0 for g in receive["groups_ns_per_packet"]} | {"app": 1000.0}
    again = Trial(dataclasses.replace(first.result, profile=other, repeat=2), first.record, first.method)
    drawn = plots.cpu_time([first, again])
    ax_pct, ax_ns = drawn.figure.axes
    assert [t.get_text() for t in ax_pct.get_yticklabels()] == ["pcap 1518 B (mean of 2)"]
    app = groups.table().names().index("app")
    assert ax_pct.containers[app][0].get_width() == pytest.approx(
        (rec["roles"]["receive"]["groups_pct"]["app"] + 100.0) / 2)
    assert ax_ns.containers[app][0].get_width() * axis_unit("ns", ax_ns.get_xlabel()).factor == pytest.approx(
        (rec["roles"]["receive"]["groups_ns_per_packet"]["app"] + 1000.0) / 2)
    assert "means of up to 2 repetitions" in drawn.caption


def test_without_profiles_the_figure_is_skipped_with_a_reason():
    skipped = plots.cpu_time(load_run(UNPROFILED).trials)
    assert isinstance(skipped, plots.Skipped) and "--profile" in skipped.reason


def test_many_settings_stay_readable(tmp_path):
    """Twelve bars (four backends at three placements' worth of app loads): a label each, none cut."""
    run = load_run(PLAIN)
    trials = [Trial(dataclasses.replace(t.result, app_load=load), t.record, t.method)
              for t in run.trials for load in (None, "spin:100", "spin:500")]
    drawn = plots.cpu_time(trials)
    png, svg = plots.save(drawn.figure, tmp_path / "many")
    width, height = assert_png(png)
    assert height > 500
    labels = [t.get_text() for t in drawn.figure.axes[0].get_yticklabels()]
    assert len(labels) == 12 and len(set(labels)) == 12 and "afxdp load spin:500 1518 B" in labels
    canvas = FigureCanvasAgg(drawn.figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in drawn.figure.axes[0].get_yticklabels()]
    assert all(b.x0 >= 0 for b in boxes)  # inside the figure
    assert all(a.y0 >= b.y1 - 0.5 or b.y0 >= a.y1 - 0.5 for a, b in zip(boxes, boxes[1:]))  # no overlap


# --- the flame graph -----------------------------------------------------------------------


def test_a_flame_graph_of_a_real_trial(tmp_path):
    path = FOLDED["2026-11-26T085803.203Z-afp-v3-1518.folded"]
    folded = flamegraph.read(path)
    assert folded.skipped == 0 and folded.total == records(PLAIN)["afp-v3", 1518]["profile"]["samples"]
    lay = flamegraph.layout(folded)
    svg = plots.write_figure(flamegraph.draw(lay, flamegraph.title("afp-v3, 1518 B", lay, folded, 1003009, 997)),
                             tmp_path / "flame.svg")
    texts = svg_texts(svg)
    # every frame of the three widest stacks is labelled: its whole name, or its start and ".."
    for frames, _n in sorted(folded.stacks, key=lambda s: -s[1])[:3]:
        for f in frames:
            name = flamegraph.shown_name(f)
            assert name in texts or any(t.endswith("..") and len(t) >= 4 and name.startswith(t[:-2]) for t in texts), f
    assert "CPU 1 (receive, counter)" in texts and "napi_threaded_poll" in texts
    title = next(t for t in texts if t.startswith("afp-v3, 1518 B"))
    assert f"{folded.total:,} samples" in title and "1.003 ms" in title and "997 Hz" in title
    # the frames narrower than 0.1 % of the samples: counted here from the stacks, and not drawn
    width: dict[tuple[str, ...], int] = {}
    for frames, n in folded.stacks:
        for i in range(1, len(frames) + 1):
            width[frames[:i]] = width.get(frames[:i], 0) + n
    narrow = [k for k, w in width.items() if w < 0.001 * folded.total]
    assert narrow and lay.dropped == len(narrow) and len(lay.boxes) == len(width) - len(narrow)
    assert f"{len(narrow):,} frames narrower than 0.1 % of the samples not drawn" in " ".join(texts)
    assert all(b.count >= 0.001 * folded.total for b in lay.boxes)


def test_frames_take_their_group_s_colour():
    def colour(name, depth=3):
        return flamegraph.color(flamegraph.Box(name, depth, 0, 1))
    t = groups.table()
    assert colour("veth_poll_[k]") == t.color("driver")
    assert colour("page_pool_put_unrefed_netmem_[k]") == t.color("buffers")
    assert colour("tpacket_rcv.constprop.0_[k]") == t.color("socket")
    assert colour("do_idle_[k]") == t.color("idle")
    assert colour("v3_ring_run") == t.color("app")  # user space
    assert colour("do_syscall_64_[k]") == flamegraph.NEUTRAL_COLOR  # no group names it
    assert colour("veth_poll_[k]", depth=0) == flamegraph.ROOT_COLOR  # a CPU frame whatever its name


def test_labels_fit_or_are_cut_with_two_dots():
    name = "__netif_receive_skb_list_core"
    assert flamegraph.label(name, 1000) == name
    cut = flamegraph.label(name, 60)
    assert cut.endswith("..") and name.startswith(cut[:-2]) and len(cut) < len(name)
    assert flamegraph.label(name, 10) == ""


def test_garbage_lines_are_counted_and_skipped(tmp_path):
    clean = FOLDED["2026-11-26T085813.615Z-xdp-64.folded"].read_text().splitlines()
    garbage = ["no count here", "CPU 0;a;b", "CPU 0;;b 4", "CPU 0;a -3", "CPU 0;a 0", "CPU 0;a 1.5",
               "CPU 0;a " + "9" * 40, "a;b c", " 5", ";;; 2", "CPU 0;a 1e9"]
    mixed = [x for pair in zip(clean, garbage + [""] * len(clean)) for x in pair]
    path = tmp_path / "mixed.folded"
    path.write_bytes("\n".join(mixed).encode() + b"\n\n")
    folded = flamegraph.read(path)
    assert folded.skipped == len(garbage) and folded.stacks == flamegraph.parse(clean).stacks
    lay = flamegraph.layout(folded)
    svg = plots.write_figure(flamegraph.draw(lay, flamegraph.title("xdp", lay, folded, None, None)),
                             tmp_path / "mixed.svg")
    assert f"{len(garbage)} lines of the file unreadable, skipped" in " ".join(svg_texts(svg))


def test_a_folded_file_outside_the_results_folder_is_refused(tmp_path):
    for name in ("../../etc/passwd", "/etc/passwd", "", "profiles/\0x"):
        with pytest.raises(UsageError):
            flamegraph.folded_path(tmp_path, name)
    assert flamegraph.folded_path(tmp_path, "profiles/a.folded") == tmp_path / "profiles" / "a.folded"
    taken: set[str] = set()
    assert flamegraph.file_name("profiles/a b;c.folded", taken) == "flame-a_b_c.svg"
    assert flamegraph.file_name("other/a b;c.folded", taken) == "flame-a_b_c-2.svg"


# --- the report ----------------------------------------------------------------------------


def section(page: str) -> str:
    return page.split("<h2>Where the CPU time goes</h2>")[1].split("</section>")[0]


def test_report_html_has_the_section_with_a_flame_graph_link_per_trial(report):
    page = report.html.read_text()
    part = section(page)
    assert "perf version 6.1.192" in part and "997 Hz" in part and "1.003 ms" in part
    assert 'id="fig-cpu_time"' in part and 'id="fig-cpu_time"' not in page.split("<h2>Where the CPU time goes")[0]
    links = re.findall(r'<a href="(flame-[^"]+\.svg)">flame graph</a>', part)
    assert sorted(links) == sorted(f"flame-{Path(n).stem}.svg" for n in FOLDED)
    for link in links:
        assert (report.dir / link).is_file() and svg_texts(report.dir / link)
    rec = records(PLAIN)["pcap", 1518]["profile"]
    rx = rec["roles"]["receive"]
    row = next(r for r in part.split("<tr>") if "<td>1518</td>" in r and "pcap" in r)
    assert f"{rx['ns_per_packet']:,.0f}" in row and f"{rx['samples']:,} of {rx['expected_samples']:,}" in row
    assert f"{rec['unresolved_frames']:,} of {rec['frames']:,}" in row
    assert rx["top_self"][0][0] in row and "<br>" in row  # the top three, a line each
    assert f"{rec['roles']['counter']['ns_per_packet']:,.0f}" in row
    assert set(report.flame_graphs) == {f"profiles/{n}" for n in FOLDED}


def test_tables_md_and_txt_have_a_compact_table(report):
    md = report.markdown.read_text()
    part = md.split("## Where the CPU time goes")[1]
    assert "perf version 6.1.192" in part
    assert part.count("[flame graph](flame-") == len(FOLDED)
    assert "Where the CPU time goes (--profile)" in report.text.read_text()


def test_a_missing_or_refused_folded_file_is_said_not_a_traceback(tmp_path):
    run = copy(PLAIN, tmp_path / "run")
    (run / "profiles" / "2026-11-26T085756.252Z-pcap-1518.folded").unlink()
    (run / "profiles" / "2026-11-26T085813.615Z-xdp-64.folded").write_bytes(b"\xff\xfe garbage\n")
    rewrite(run, lambda r: r | {"profile": r["profile"] | {"folded": "../../../etc/passwd"}}
            if r["backend"] == "afxdp" else r)
    rep = write_report(run)
    part = section(rep.html.read_text())
    assert len(re.findall(r">flame graph</a>", part)) == 1  # afp-v3's
    assert part.count("not drawn:") == 3
    assert "2026-11-26T085756.252Z-pcap-1518.folded" in part and "not UTF-8" in part
    assert "not a file in the results folder" in part
    assert "Traceback" not in part


def test_a_run_without_profiles_says_so(tmp_path):
    rep = write_report(copy(UNPROFILED, tmp_path / "run"))
    page = rep.html.read_text()
    assert "<h2>Where the CPU time goes</h2>" not in page  # no section: the figures' one line of what is not drawn
    not_drawn = page.split('id="not-drawn"')[1].split("</details>")[0]
    assert "Where the receive CPU&#x27;s time goes" in not_drawn and html.escape(profiles.NOT_PROFILED) in not_drawn
    assert not list(rep.dir.glob("flame-*")) and rep.flame_graphs == {}
    assert "Where the CPU time goes" not in rep.markdown.read_text()


# --- compare -------------------------------------------------------------------------------


def test_compare_shows_how_each_group_of_the_receive_cpu_changed(tmp_path):
    cmp = compare.compare(load_run(PLAIN), load_run(SPIN))
    keys = {pc.key for pc in cmp.profile}
    assert {(k.series.backend, k.frame_len) for k in keys} == {("pcap", 1518), ("afp-v3", 1518)}
    a, b = records(PLAIN)["pcap", 1518]["profile"], records(SPIN)["pcap", 1518]["profile"]
    rows = {pc.group: pc for pc in cmp.profile if pc.key.series.backend == "pcap"}
    assert list(rows) == [compare.TOTAL, *groups.table().names()]
    total = rows[compare.TOTAL]
    rx_a, rx_b = a["roles"]["receive"], b["roles"]["receive"]
    assert total.ns.delta == pytest.approx(rx_b["ns_per_packet"] - rx_a["ns_per_packet"])
    app = rows["app"]
    assert app.share.delta > 20 and app.ns.delta > 3000  # the counter's spin, on the receive CPU
    assert app.ns.delta == pytest.approx(rx_b["groups_ns_per_packet"]["app"] - rx_a["groups_ns_per_packet"]["app"])
    assert rows["idle"].ns is None
    assert not any(c.judged for pc in cmp.profile for c in (pc.share, pc.ns) if c is not None)
    assert cmp.regressions(0) == []  # and never a regression
    text = compare_out.terminal_text(cmp)
    assert compare_out.PROFILE_TITLE in text and "shown, not judged" in text
    line = next(x for x in text.splitlines() if "the application" in x and "pcap" not in x)
    assert "+3,486 (×32.4)" in text and line
    out = tmp_path / "cmp"
    p = capbench("compare", str(PLAIN), str(SPIN), "--out", str(out))
    assert p.returncode == 0, p.stderr
    md = (out / "compare.md").read_text()
    assert f"## {compare_out.PROFILE_TITLE}" in md and "| pcap 1518 B | receive CPU, busy |" in md
    assert "Verdict" not in md.split(compare_out.PROFILE_TITLE)[1]  # nothing to judge: no such column
    page = (out / "compare.html").read_text()
    assert "Each group of receive work, B against A" in page and "buffer and skb alloc/free" in page


def repeated(src: Path, dest: Path, scale: float) -> Path:
    """`src`'s pcap 1518 B trial three times over, its receive CPU's figures scaled by 1, scale, scale²
    (each repetition a little off the others)."""
    r = records(src)["pcap", 1518]
    lines = []
    for k in range(3):
        x = json.loads(json.dumps(r))
        rx = x["profile"]["roles"]["receive"]
        f = scale ** k
        rx["groups_pct"] = {g: v * f for g, v in rx["groups_pct"].items()}
        rx["groups_ns_per_packet"] = {g: v * f for g, v in rx["groups_ns_per_packet"].items()}
        rx["ns_per_packet"] *= f
        x["repeat"], x["step"] = k + 1, x["step"].replace("rep=1", f"rep={k + 1}")
        lines.append(json.dumps(x))
    dest.mkdir()
    shutil.copy(src / "run.json", dest / "run.json")
    (dest / "trials.jsonl").write_text("\n".join(lines) + "\n")
    return dest


def test_with_repetitions_a_profile_s_change_is_judged(tmp_path):
    cmp = compare.compare(load_run(repeated(PLAIN, tmp_path / "a", 1.01)),
                          load_run(repeated(SPIN, tmp_path / "b", 0.99)))
    rows = {pc.group: pc for pc in cmp.profile}
    assert rows["app"].share.by_repetitions and rows["app"].share.significant and rows["app"].share.p is not None
    assert compare_out.profile_verdict(rows["app"].share) == "more"
    assert compare_out.profile_verdict(rows[compare.TOTAL].ns) == "more"
    assert {c.metric.name for c in cmp.regressions(0)} <= set(compare.WATCHED)  # the app load's, not a profile's
    text = compare_out.terminal_text(cmp)
    assert "Verdict" in text.split(compare_out.PROFILE_TITLE)[1] and "Holm" in text


def test_a_measurement_profiled_in_one_run_only_is_named(tmp_path):
    bare = copy(SPIN, tmp_path / "bare")
    rewrite(bare, lambda r: r | {"profile": {}})
    cmp = compare.compare(load_run(PLAIN), load_run(bare))
    assert cmp.profile == [] and {w for _k, w in cmp.profiled_once} == {"A"}
    assert "Profiled in one run only" in compare_out.terminal_text(cmp)
    plain = compare.compare(load_run(UNPROFILED), load_run(UNPROFILED))
    assert plain.profile == [] and plain.profiled_once == []
    assert compare_out.PROFILE_TITLE not in compare_out.markdown(plain)
