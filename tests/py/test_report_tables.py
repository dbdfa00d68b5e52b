"""The report's tables (Markdown, CSV, the terminal text) and its summary, from trial records."""

import csv
import io

from capbench.report import summary, tables_md
from capbench.report.load import load_run
from capbench.report.writer import write_report
from report_files import FIXTURE, copy_fixture, trial


def test_markdown_has_the_seed_columns_and_marks_short_rows():
    md = tables_md.markdown(load_run(FIXTURE).trials)
    assert "| Frame [B] | Offered [pps] | Captured [pps / Gbps] | Loss [%] | App / kernel load [%] |" in md
    assert "### iperf: pcap (1g link, A:A (gen 0, rx 1, app 1)" in md
    assert "### iperf: afp-v3" in md
    # pcap at 64 B: the generator sent 288,205 of 1,488,095 pps; its loss is marked, not capture loss
    row = next(line for line in md.splitlines() if line.startswith("| 64 | 288,205* |"))
    assert "| 21.35* |" in row and "not a capture result" in row
    assert "| 512 | 234,962 | 234,962 / 1.000 | 0 |" in md  # afp-v3 at 512 B, lossless and valid
    assert "counters disagree by -32,287 packets" in md
    assert "| afp-v3 | 2 | 313,207 | 0 | 0 | 1 |" in md  # totals count only trials that reached their load


def test_csv_keeps_full_precision_and_the_flag():
    rows = list(csv.DictReader(io.StringIO(tables_md.csv_text(load_run(FIXTURE).trials))))
    assert len(rows) == 6
    assert [r["invalid_offered_load"] for r in rows].count("True") == 4
    first = rows[0]
    assert first["backend"] == "pcap" and first["frame_len"] == "64"
    assert float(first["loss_pct"]) == 21.34931762946345
    assert first["placement"] == "A:A (gen 0, rx 1, app 1)"


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
    best, losses = summary.summary(load_run(FIXTURE).trials)
    assert best[0] == "64 B: no result — the generator fell short of the offered load for every backend."
    assert best[1].startswith("512 B: afp-v3 — 234,962 pps (1.000 Gbps), loss 0 %")
    assert "for pcap: not measured" in best[1]
    assert losses == [
        "pcap: no result — the generator fell short of the offered load at every frame length.",
        "afp-v3: no loss at 512, 1518 B; not measured at 64 B (generator short of the offered load).",
    ]


def test_summary_first_loss_point_and_best_per_size():
    trials = [trial(backend="pcap", frame_len=1518, sent=400_000), trial(backend="pcap", frame_len=512, sent=1_000_000,
                                                                         received=999_990, socket_drops=10),
              trial(backend="pcap", frame_len=64, sent=7_000_000, received=3_000_000, socket_drops=4_000_000),
              trial(backend="afp-v3", frame_len=64, sent=7_000_000, received=6_000_000, socket_drops=1_000_000)]
    best, losses = summary.summary(trials)
    assert best[0].startswith("64 B: afp-v3 — 1,200,000 pps")
    assert losses[0].startswith("pcap: loses packets from 512 B down (loss 0.0010 % at 512 B")
    assert losses[1].startswith("afp-v3: loses packets from 64 B down (loss 14.29 %")


def test_rfc2544_table_has_a_column_per_placement():
    trials = []
    for cap, limit in ((1, 400_000), (0, 900_000)):  # kernel receive work on CPU 1: A:A, then A:B
        for rate in (1_488_095, 744_047, 372_023):
            sent = rate * 5
            trials.append(trial("rfc2544", backend="afp-v3", frame_len=64, sent=sent, cap_cpu=cap, kernel_rx_cpu=1,
                                received=sent if rate <= limit else sent - 3, rate=f"{rate}pps", offered_pps=rate))
    trials.append(trial("rfc2544", backend="afp-v3", frame_len=1518, sent=5, received=4, cap_cpu=1, kernel_rx_cpu=1))
    [(title, headers, rows)] = tables_md.rfc2544_tables(trials)
    assert title.startswith("RFC 2544 throughput: afp-v3 (1g link")
    assert headers == ["Frame [B]", "#1 A:A [pps / Gbps]", "#2 A:B [pps / Gbps]"]
    assert rows == [["1518", "—", "—"], ["64", "372,023 / 0.250", "744,047 / 0.500"]]
    assert "### RFC 2544 throughput: afp-v3" in tables_md.markdown(trials)
    assert tables_md.rfc2544_tables(load_run(FIXTURE).trials) == []


def test_summary_names_the_first_loss_of_a_sweep():
    trials = [trial("sweep", backend="afp-v3", frame_len=64, sent=rate * 5, rate=f"{rate}pps", offered_pps=rate,
                    received=rate * 5 - (0 if rate < 1_000_000 else 50), socket_drops=0 if rate < 1_000_000 else 50)
              for rate in (400_000, 800_000, 1_200_000)]
    best, losses = summary.summary(trials)
    assert best == []
    assert losses == ["afp-v3 64 B (sweep): loses packets from 1,200,000 pps (loss 0.00083 %)."]


def test_summary_says_when_backends_capture_as_much():
    trials = [trial(backend="pcap", frame_len=1518, sent=406_370, app_cpu_pct=9.0),
              trial(backend="afp-v3", frame_len=1518, sent=406_370, app_cpu_pct=3.0)]
    best, _ = summary.summary(trials)
    assert best == ["1518 B: afp-v3 — 81,274 pps (1.000 Gbps), loss 0 %, app / kernel load 3.0 / 12.2 % "
                    "(pcap captured as much, with more CPU)."]
