"""The report `capbench run` writes at the end (the run itself is tested end to end)."""

import pytest
from capbench.cli.main import main
from capbench.cli.parser import build_parser
from capbench.cli.run import write_run_report
from capbench.report.console import print_results
from report_files import copy_fixture


def test_run_writes_the_report_of_its_results(tmp_path, capsys):
    run = copy_fixture(tmp_path)
    write_run_report(run)
    assert (run / "report" / "report.html").exists()
    assert "report: " in capsys.readouterr().err


def test_a_report_that_cannot_be_written_does_not_fail_the_run(tmp_path, capsys):
    write_run_report(tmp_path)  # no trials: the report says why, the run keeps its status
    err = capsys.readouterr().err
    assert "report not written" in err and f"capbench report {tmp_path}" in err


def test_no_report_option():
    assert build_parser().parse_args(["run", "--no-report"]).no_report is True
    assert build_parser().parse_args(["run"]).no_report is False


def test_the_end_of_a_run_prints_the_rfc2544_table_too(capsys):
    """`capbench run` ends with the iperf-like tables of its iperf trials, the RFC 2544 table (#1 A:A,
    #2 A:B) of the answers in searches.jsonl, the sweeps, and every answer."""
    from capbench.report.load import load_run
    from test_report_tables import SEARCHES_A, recorded

    run = load_run(SEARCHES_A)
    print_results([t.result for t in run.trials], run.outcomes)
    out = capsys.readouterr().out
    words = " ".join(out.split())
    assert words.count("Iperf-like capture throughput") == 4
    assert "RFC 2544 throughput: pcap (1g link, engine xdp" in words
    assert "Frame [B] #1 A:A [pps / Gbps] #2 A:B [pps / Gbps]" in words
    row = next(line for line in out.split("RFC 2544 throughput: pcap")[1].splitlines() if line.split()[:1] == ["64"])
    expected = recorded(SEARCHES_A)
    assert f"{expected['pcap', 'A:A', 64]:,.0f} / 0.188" in row and f"{expected['pcap', 'A:B', 64]:,.0f} / 0.297" in row
    assert "Sweep: pcap 64 B" in words and "Method answers (searches.jsonl" in words


def test_the_end_of_a_run_of_searches_prints_no_iperf_table(capsys):
    from capbench.report.load import load_run
    from test_report_tables import SEARCHES_A

    run = load_run(SEARCHES_A)
    print_results([t.result for t in run.trials if t.method == "rfc2544"],
                         [o for o in run.outcomes if o["method"] == "rfc2544"])
    words = " ".join(capsys.readouterr().out.split())
    assert "Iperf-like" not in words and "No trial finished" not in words
    assert "RFC 2544 throughput: afp-v3" in words and "Sweep" not in words


@pytest.mark.parametrize("name", ["report.html", "tables.md", "tables.txt", "trials.csv", "throughput.png",
                                  "throughput.svg"])
def test_a_link_in_the_report_folder_is_never_written_through(tmp_path, name):
    # capbench runs as root: a link planted where the report goes (here to a file standing for
    # /etc/shadow) must not have the report overwrite the file it leads to.
    from capbench.errors import UsageError
    from capbench.report.writer import write_report

    run = copy_fixture(tmp_path)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run / "report").mkdir(exist_ok=True)
    (run / "report" / name).symlink_to(victim)
    with pytest.raises(UsageError, match="symbolic link"):
        write_report(run)
    assert victim.read_text() == "precious\n"


@pytest.mark.parametrize("name", ["compare.html", "compare.md", "compare.txt", "compare.png", "compare.svg"])
def test_a_link_in_the_compare_folder_is_never_written_through(tmp_path, name):
    a, b = copy_fixture(tmp_path / "a"), copy_fixture(tmp_path / "b")
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (out / name).symlink_to(victim)
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 2
    assert victim.read_text() == "precious\n"
