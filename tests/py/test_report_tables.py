"""The report's tables (Markdown, CSV, the terminal text) and its summary, from trial records."""

import csv
import io
import json
import shutil
import statistics
from pathlib import Path

import pytest

from capbench.report import answers, plots, summary, tables_md
from capbench.report.compare import compare
from capbench.report.load import load_run
from capbench.report.writer import terminal_tables, write_report
from report_files import FIXTURE, copy_fixture, trial

# A campaign of iperf, rfc2544 (A:A and A:B), mlr and sweep steps, twice each but mlr, recorded by
# capbench's campaign runner against the simulated capture path (fixtures/make_simulated_runs.py):
# trials.jsonl with step keys and repetitions, searches.jsonl with the methods' answers.
SEARCHES_A = FIXTURE.parent / "run-searches-a"
SEARCHES_B = FIXTURE.parent / "run-searches-b"


def run_copy(tmp_path: Path, src: Path = SEARCHES_A, keep=lambda record: True, searches: bool = True,
             name: str = "run") -> Path:
    """A writable copy of a stored run, with only the trials `keep` accepts, and without
    searches.jsonl unless `searches`."""
    dest = tmp_path / name
    shutil.copytree(src, dest)
    lines = [line for line in (dest / "trials.jsonl").read_text().splitlines() if keep(json.loads(line))]
    (dest / "trials.jsonl").write_text("\n".join(lines) + "\n")
    if not searches:
        (dest / "searches.jsonl").unlink()
    return dest


def recorded(path: Path, method: str = "rfc2544", field: str = "throughput_pps") -> dict[tuple, float]:
    """(backend, pin, frame length) -> the median over repetitions of an answer, read straight from
    searches.jsonl."""
    values: dict[tuple, list[float]] = {}
    for line in (path / "searches.jsonl").read_text().splitlines():
        o = json.loads(line)
        if o["method"] == method:
            values.setdefault((o["backend"], o["pin"], o["frame_len"]), []).append(o[field] or 0.0)
    return {k: statistics.median(v) for k, v in values.items()}


def test_markdown_has_the_seed_columns_and_marks_short_rows():
    md = tables_md.markdown(load_run(FIXTURE).trials)
    assert ("| Frame [B] | Offered [pps] | Sent [pps] | Captured [pps / Gbps] | Loss [%] | App / kernel load [%] | "
            "Lost in rx ring / backlog / socket / unexplained |") in md
    assert "### iperf: pcap (1g link, A:A (gen 0, rx 1, app 1)" in md
    assert "### iperf: afp-v3" in md
    # pcap at 64 B: the generator sent 288,205 of 1,488,095 pps, and what it sent was lost: capture loss
    row = next(line for line in md.splitlines() if line.startswith("| 64 | 1,488,095 | 288,205* |"))
    assert "| 21.35 |" in row and row.endswith("| the generator could not hold 1,488,095 pps |")
    # pcap at 512 B: the generator short and nothing lost: a lower bound
    assert "| 512 | 234,962 | 46,126* | 46,126 / 0.196 (lower bound) | 0 | 0.8 / 35.9 | — | the generator could " \
           "not hold 234,962 pps |" in md
    # what `*` means: once under each table, not in each row
    assert md.count("the captured rate is a lower bound") == 0 and md.count("A starred row that lost nothing") == 2
    assert "| 512 | 234,962 | 234,962 | 234,962 / 1.000 | 0 |" in md  # afp-v3 at 512 B, lossless and valid
    assert "counters disagree by -32,287 packets" in md
    # totals count the trials measured (a short generator's loss too), not the lower bounds
    assert "| afp-v3 | 3 | 992,390 | 35,303 | 3.56 | 0 |" in md and "| pcap | 2 | 459,982 | 97,820 | 21.27 | 1 |" in md


def test_csv_keeps_full_precision_and_the_flag():
    rows = list(csv.DictReader(io.StringIO(tables_md.csv_text(load_run(FIXTURE).trials))))
    assert len(rows) == 6
    assert [r["invalid_offered_load"] for r in rows].count("True") == 4
    first = rows[0]
    assert first["backend"] == "pcap" and first["frame_len"] == "64"
    assert float(first["loss_pct"]) == 21.34931762946345
    assert (first["gen_cpu"], first["kernel_rx_cpu"], first["cap_cpu"]) == ("0", "1", "1")


def test_a_small_loss_never_reads_zero():
    t = trial(sent=10_000_000, received=9_999_999, socket_drops=1)
    md = tables_md.markdown([t])
    assert "| 0.000010 |" in md
    assert tables_md.csv_text([t]).count("1e-05") == 1
    assert "| 0 |" not in md.split("Total loss")[0]


def test_terminal_tables_are_written(tmp_path):
    report = write_report(copy_fixture(tmp_path))
    text = report.text.read_text()
    assert "Iperf-like capture throughput: pcap" in text and "288,205*" in text
    assert (report.dir / "tables.md").read_text().startswith("# capbench report: run")


def test_summary_names_the_best_backend_and_never_a_short_trial():
    """Issue 14: a trial that lost frames is lossy whether or not its generator held the offered
    load (the fixture's 64 B trials: the generator short, afp-v3 lost 5.2 % and pcap 21 % of what was
    sent); one that lost nothing with the generator short (pcap 512 B) is not measured."""
    best, losses = summary.summary(load_run(FIXTURE).trials)
    assert best[0] == ("64 B: afp-v3 — 643,849 pps (0.433 Gbps), loss 5.20 %, app / kernel load 13.0 / 67.0 %, "
                       "the generator sent 679,151 of the 1,488,095 pps offered.")
    assert best[1].startswith("512 B: afp-v3 — 234,962 pps (1.000 Gbps), loss 0 %")
    assert "for pcap, nothing lost: a lower bound, not a result" in best[1]
    assert losses == [
        "pcap: loses packets from 1518 B down (loss 20.15 % at 1518 B, measured once, captured 0.318 Gbps); a lower "
        "bound at 512 B (generator short of the offered load, nothing lost).",
        "afp-v3: loses packets at 64 B (loss 5.20 % at 64 B, measured once, captured 0.433 Gbps).",
        summary.MEASURED_ONCE,
        summary.advice_line(t for t in load_run(FIXTURE).trials if t.result.frame_len == 512),
    ]
    assert losses[-1].startswith("To measure the lower bounds: a lower --rate: at 512 B")


def test_summary_first_loss_point_and_best_per_size():
    trials = [trial(backend="pcap", frame_len=1518, sent=400_000), trial(backend="pcap", frame_len=512, sent=1_000_000,
                                                                         received=999_990, socket_drops=10),
              trial(backend="pcap", frame_len=64, sent=7_000_000, received=3_000_000, socket_drops=4_000_000),
              trial(backend="afp-v3", frame_len=64, sent=7_000_000, received=6_000_000, socket_drops=1_000_000)]
    best, losses = summary.summary(trials)
    assert best[0].startswith("64 B: afp-v3 — 1,200,000 pps")
    assert losses[0].startswith("pcap: loses packets from 512 B down (loss 0.0010 % at 512 B")
    assert losses[1].startswith("afp-v3: loses packets at 64 B (loss 14.29 %")


def test_rfc2544_table_has_a_column_per_placement():
    trials = []
    for cap, limit in ((1, 400_000), (0, 900_000)):  # kernel receive work on CPU 1: A:A, then A:B
        rates = [(1_488_095, "search"), (744_047, "search"), (372_023, "search")]
        rates.append((372_023 if limit < 744_047 else 744_047, "verify"))
        for rate, purpose in rates:
            sent = rate * 5
            trials.append(trial("rfc2544", backend="afp-v3", frame_len=64, sent=sent, cap_cpu=cap, kernel_rx_cpu=1,
                                received=sent if rate <= limit else sent - 3, rate=f"{rate}pps", offered_pps=rate,
                                purpose=purpose))
    # at 1518 B the one search trial lost frames: no rate passed, so no verification and no answer
    trials.append(trial("rfc2544", backend="afp-v3", frame_len=1518, sent=5, received=4, cap_cpu=1, kernel_rx_cpu=1,
                        purpose="search"))
    [t] = tables_md.method_tables(trials, "rfc2544")
    assert t.title.startswith("RFC 2544 throughput: afp-v3 (1g link")
    assert t.headers == ["Frame [B]", "#1 A:A [pps / Gbps]", "#2 A:B [pps / Gbps]"]
    assert t.rows == [["1518", "—", ""], ["64", "372,023 / 0.250", "744,047 / 0.500"]]
    assert "### RFC 2544 throughput: afp-v3" in tables_md.markdown(trials)
    assert tables_md.method_tables(load_run(FIXTURE).trials, "rfc2544") == []


def test_a_pass_that_its_verification_failed_is_never_the_throughput():
    """Defect: the highest lossless search trial was reported, though the verification trial of that
    rate then lost frames. Without searches.jsonl only a rate whose verification passed counts."""
    rates = [(1_488_095, 9_000, "search"), (744_047, 0, "search"), (1_116_071, 5_000, "search"),
             (744_047, 30, "verify"), (372_023, 0, "search"), (558_035, 0, "search"), (651_041, 70, "search"),
             (558_035, 0, "verify")]
    trials = [trial("rfc2544", backend="pcap", frame_len=64, sent=r * 5, received=r * 5 - lost, socket_drops=lost,
                    rate=f"{r}pps", offered_pps=r, purpose=p) for r, lost, p in rates]
    [t] = tables_md.method_tables(trials, "rfc2544")
    assert t.rows == [["64", "558,035 / 0.375 †"]]
    assert t.notes[0].startswith("† 64 B A:A: the verification trial failed at 744,047 pps")
    # cut short after the failed verification: no answer at all, not the distorted 744,047
    [t] = tables_md.method_tables(trials[:5], "rfc2544")
    assert t.rows == [["64", "— †"]]
    # the method's own answer, when searches.jsonl holds one, is the answer of record
    outcome = {"method": "rfc2544", "backend": "pcap", "frame_len": 64, "throughput_pps": 550_000.0,
               "verified": True, "precision_pct": 1.0}
    [t] = tables_md.method_tables(trials, "rfc2544", answers.answers_of(trials, [outcome]))
    assert t.rows == [["64", "550,000 / 0.370"]]


def test_rfc2544_tables_figure_and_compare_give_the_answers_of_searches_jsonl(tmp_path):
    run = load_run(SEARCHES_A)
    expected = recorded(SEARCHES_A)
    assert len(expected) == 12  # 2 backends x 2 placements x 3 frame lengths, each searched twice
    found = answers.run_answers(run)
    assert all(a.source == "searches.jsonl" for a in found)
    # pcap A:A at 64 B: a search pass at a higher rate failed its verification (saturation)
    pcap_64 = [t for t in run.trials if t.method == "rfc2544" and t.result.step.startswith("rfc2544|pcap|64|pin=A:A")]
    distorted = max(t.result.offered_pps for t in pcap_64 if t.result.lost == 0)
    assert distorted > expected["pcap", "A:A", 64] * 1.05

    # the tables: Markdown, HTML and the terminal's
    cells = {}
    for t in tables_md.method_tables(run.trials, "rfc2544", found):
        backend = t.title.split(": ")[1].split(" (")[0]
        for row in t.rows:
            for header, cell in zip(t.headers[1:], row[1:]):
                cells[backend, header.split()[1], int(row[0])] = cell
    assert set(cells) == set(expected)
    for key, value in expected.items():
        assert cells[key].startswith(f"{value:,.0f} / "), (key, cells[key])
    assert cells["pcap", "A:A", 64].endswith("(n=2, all equal) †")
    assert "(223,949–227,620, sd 2,596, n=2)" in cells["pcap", "A:B", 512]  # two answers that differ
    text = terminal_tables(run)
    row = next(line for line in text.split("RFC 2544 throughput: pcap")[1].splitlines()
               if line.split()[:1] == ["64"])
    assert f"{expected['pcap', 'A:A', 64]:,.0f} / 0.188 (n=2, all" in row and f"{distorted:,.0f}" not in row
    page = write_report(run_copy(tmp_path)).html.read_text()
    assert f"<td>{expected['pcap', 'A:B', 64]:,.0f} / 0.297 (n=2, all equal)</td>" in page

    # the figure: one line per backend and placement through the recorded medians
    drawn = plots.rfc2544(run.trials, found)
    ax = drawn.figure.axes[0]
    lines = {c.get_label(): c.lines[0] for c in ax.containers}
    assert set(lines) == {"pcap A:A", "pcap A:B", "afp-v3 A:A", "afp-v3 A:B"}
    assert ax.get_ylabel() == "RFC 2544 throughput [Mpps]"
    for (backend, pin, size), value in expected.items():
        line = lines[f"{backend} {pin}"]
        # several settings at a few lengths are drawn side by side around each (plots._dodge)
        near = {min((64, 512, 1518), key=lambda s: abs(s - x)): y for x, y in zip(line.get_xdata(), line.get_ydata())}
        assert near[size] * 1e6 == pytest.approx(value)
    assert "searches.jsonl" in drawn.caption

    # compare: the answers, per step, the same medians
    changes = [c for c in compare(run, run).changes if c.metric.name == "rfc2544_pps"]
    assert {(c.key.series.backend, c.key.series.placement.split()[0], c.key.frame_len): c.a.median
            for c in changes} == expected
    assert all(c.delta == 0 and not c.significant for c in changes)


def test_without_searches_jsonl_the_answers_are_derived_alike(tmp_path):
    """The answers derived from the trials (the verification that passed; the sweep's first lossy
    step) are the methods' own; MLR's are not derived and say so."""
    with_file = answers.run_answers(load_run(SEARCHES_A))
    without = answers.run_answers(load_run(run_copy(tmp_path, searches=False)))
    assert [(a.step, a.method) for a in without] == [(a.step, a.method) for a in with_file]
    assert {a.source for a in without} == {"trials"}
    for a, b in zip(with_file, without):
        if a.method == "mlr":
            assert b.values == {} and "not derived from trials" in b.notes[0]
        else:
            assert b.values == a.values, a.step
            assert b.info.get("first_lossy_pps") == a.info.get("first_lossy_pps")
        if a.method == "rfc2544":
            assert sorted(b.info["verification_failures_pps"]) == sorted(a.info["verification_failures_pps"])


def test_summary_names_the_first_loss_of_a_sweep():
    trials = [trial("sweep", backend="afp-v3", frame_len=64, sent=rate * 5, rate=f"{rate}pps", offered_pps=rate,
                    received=rate * 5 - (0 if rate < 1_000_000 else 50), socket_drops=0 if rate < 1_000_000 else 50)
              for rate in (400_000, 800_000, 1_200_000)]
    best, losses = summary.summary(trials)
    assert best == ["64 B: afp-v3 — sweep: no loss up to 800,000 pps (0.538 Gbps)."]
    assert losses == ["afp-v3 64 B (sweep): loses packets from 1,200,000 pps (loss 0.00083 %)."]


def test_summary_says_when_backends_capture_as_much():
    trials = [trial(backend="pcap", frame_len=1518, sent=406_370, app_cpu_pct=9.0),
              trial(backend="afp-v3", frame_len=1518, sent=406_370, app_cpu_pct=3.0)]
    best, _ = summary.summary(trials)
    assert best == ["1518 B: afp-v3 — 81,274 pps (1.000 Gbps), loss 0 %, app / kernel load 3.0 / 12.2 % "
                    "(pcap captured as much, with more CPU)."]


def test_markdown_and_html_give_repetitions_as_median_min_max_and_sd(tmp_path):
    """Defect: each repetition was a row of its own in the Markdown and HTML tables."""
    run = run_copy(tmp_path)
    report = write_report(run)
    md = report.markdown.read_text()
    reps = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
    reps = [r for r in reps if r["step"].startswith("iperf|pcap|64|pin=A:A|")]
    assert [r["repeat"] for r in reps] == [1, 2]
    rx = [r["rx_pps"] for r in reps]
    loss = [r["loss_pct"] for r in reps]
    captured = (f"{statistics.median(rx):,.0f} / {statistics.median(r['rx_gbps'] for r in reps):.3f} "
                f"({min(rx):,.0f}–{max(rx):,.0f}, sd {statistics.stdev(rx):,.0f}, n=2)")
    table = md.split("### iperf: pcap A:A")[1].split("###")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[0] for row in rows] == ["| 64", "| 512", "| 1518"]  # one row per frame length
    assert f"| {captured} |" in rows[0]
    assert f"| {statistics.median(loss):.2f} ({min(loss):.2f}–{max(loss):.2f}, sd " in rows[0]
    app = [r["app_cpu_pct"] for r in reps]
    assert f"| {statistics.median(app):.1f} / " in rows[0] and f"({min(app):.1f}–{max(app):.1f}, sd " in rows[0]
    assert "| 1518 | 81,274 | 81,274 | 81,274 / 1.000 (n=2, all equal) | 0 |" in rows[2]
    page = report.html.read_text()
    assert f"<td>{captured}</td>" in page
    iperf_table = page.split("iperf: pcap A:A")[1].split("</table>")[0]
    assert iperf_table.count("<tr") == 4  # the header and one row per frame length


def test_tables_txt_keeps_search_trials_out_of_the_iperf_tables(tmp_path):
    """Defect: every method's trials went into "Iperf-like capture throughput" tables."""
    text = write_report(run_copy(tmp_path)).text.read_text()
    assert text.count("Iperf-like capture throughput") == 4  # pcap, afp-v3 x A:A, A:B
    iperf = text.split("RFC 2544 throughput")[0]
    assert "n=2" in iperf and "n=14" not in iperf and "n=7" not in iperf
    for title in ("RFC 2544 throughput: pcap", "RFC 2544 throughput: afp-v3", "MLR search (lower bounds): pcap",
                  "Sweep: pcap 64 B (1g link, A:A (gen 0, rx 1, app 1)"):
        assert title in " ".join(text.split()), title
    assert "#1 A:A [pps / Gbps]" in " ".join(text.split())


def test_the_summary_of_a_run_without_iperf_trials(tmp_path):
    """Defect: a run of searches had an empty summary ("No iperf-like trials")."""
    run = run_copy(tmp_path, keep=lambda r: r["method"] != "iperf")
    report = write_report(run)
    expected = recorded(SEARCHES_A)
    md = report.markdown.read_text()
    assert "## Best backend per frame length (RFC 2544 throughput)" in md
    best_64 = max((v, k) for k, v in expected.items() if k[2] == 64)
    assert f"- 64 B: {best_64[1][0]} {best_64[1][1]} — RFC 2544 throughput {best_64[0]:,.0f} pps" in md
    assert "- 1518 B: pcap A:A — RFC 2544 throughput 81,274 pps (1.000 Gbps, the wire rate)" in md
    assert (f"- pcap A:A (RFC 2544): lossless up to {expected['pcap', 'A:A', 64]:,.0f} pps (0.188 Gbps; median "
            f"of 2) at 64 B, loses at 302,269 pps;") in md
    mlr = [json.loads(line) for line in (SEARCHES_A / "searches.jsonl").read_text().splitlines()]
    ndr = next(g["throughput_pps"] for o in mlr if o["method"] == "mlr" and o["backend"] == "pcap"
               for g in o["goals"] if g["name"] == "NDR")
    assert f"- pcap (MLR NDR): lossless up to {ndr:,.0f} pps" in md
    first = recorded(SEARCHES_A, "sweep", "first_lossy_pps")
    assert f"- pcap 64 B (sweep): loses packets from {first['pcap', 'A:A', 64]:,.0f} pps" in md
    page = report.html.read_text()
    assert "No iperf-like trials" not in page and "Best backend per frame length (RFC 2544 throughput)" in page
    assert "Iperf-like" not in report.text.read_text()


def test_the_summary_of_an_mlr_run_names_ndr():
    run = load_run(SEARCHES_A)
    mlr = [t for t in run.trials if t.method == "mlr"]
    best, losses = summary.summary(mlr, answers.answers_of(mlr, [o for o in run.outcomes if o["method"] == "mlr"]))
    assert best == ["64 B: afp-v3 — MLR NDR 691,104 pps (0.464 Gbps)."]
    assert losses == ["pcap (MLR NDR): lossless up to 269,839 pps (0.181 Gbps) at 64 B.",
                      "afp-v3 (MLR NDR): lossless up to 691,104 pps (0.464 Gbps) at 64 B."]
