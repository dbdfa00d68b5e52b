"""The report `capbench run` writes at the end (the run itself is tested end to end)."""

from capbench import cli, runner
from report_files import copy_fixture


def test_run_writes_the_report_of_its_results(tmp_path, capsys):
    run = copy_fixture(tmp_path)
    runner.write_run_report(run)
    assert (run / "report" / "report.html").exists()
    assert "report: " in capsys.readouterr().err


def test_a_report_that_cannot_be_written_does_not_fail_the_run(tmp_path, capsys):
    runner.write_run_report(tmp_path)  # no trials: the report says why, the run keeps its status
    err = capsys.readouterr().err
    assert "report not written" in err and f"capbench report {tmp_path}" in err


def test_no_report_option():
    assert cli.build_parser().parse_args(["run", "--no-report"]).no_report is True
    assert cli.build_parser().parse_args(["run"]).no_report is False
