"""The report of a tune's results folder says what the tune said: its ranking and verdicts first
(tune/tune.json), the figure of its goal against each knob, and the configurations' single
searches folded below, where they cannot read as the answer. A tune.json that cannot be read
is a note, and the report goes on as for a run."""

from __future__ import annotations

import html
import io
import json

from capbench.report import tune_section
from capbench.report.writer import write_report
from capbench.tune import output
from rich.console import Console
from report_files import assert_png, copy_fixture
from sim_tune import Lab, drive, small_tune


def tune_folder(tmp_path):
    """A real run's folder (its trials and searches) with the tune files of a simulated tune."""
    run = copy_fixture(tmp_path)
    tune = drive(small_tune(), Lab())
    output.finish(tune, run, Console(file=io.StringIO(), width=200))
    return run, tune


def test_a_tune_folder_report_leads_with_the_tune_and_folds_the_single_searches(tmp_path):
    run, tune = tune_folder(tmp_path)
    space = tune.spaces[0]
    rows = output.rows_of(tune, space)
    best_line = output.best_text(tune, space, rows)
    report = write_report(run)
    page = report.html.read_text()
    summary = page[page.index("<h2>Summary</h2>"):page.index("</section>")]
    searches = html.escape(tune_section.SEARCHES_TITLE)
    # the tune's answer comes first, as the tune printed it, then its ranking, best first
    assert summary.index("capbench tune afp-v3: PDR at 64 B") < summary.index(searches)
    assert html.escape(best_line) in summary
    ranking = summary[summary.index("Ranking of afp-v3"):]
    assert [ranking.index(f"<td>{r.rank}</td>") for r in rows] == sorted(ranking.index(f"<td>{r.rank}</td>")
                                                                         for r in rows)
    assert "run it: sudo capbench run --backends afp-v3" in summary
    # the run's own summary (its best backend per frame length) is there, but folded under the tune's
    folded = summary[summary.index('<details class="table"><summary>' + searches):]
    assert "Best backend per frame length" in folded
    assert summary.index("Best backend per frame length") > summary.index("Ranking of afp-v3")
    # the tune's figure, drawn from tune.json, first among the figures
    (fig,) = [f for f in report.figures if f.name == "tune-1"]
    assert fig is report.figures[0] and fig.skipped is None
    assert_png(fig.png)
    assert 'id="fig-tune-1"' in page
    md = report.markdown.read_text()
    assert md.index("## capbench tune afp-v3: PDR at 64 B") < md.index(f"## {tune_section.SEARCHES_TITLE}")
    assert md.index(f"## {tune_section.SEARCHES_TITLE}") < md.index("### Best backend per frame length")
    assert report.notes == []


def test_a_run_without_a_tune_reports_as_before(tmp_path):
    run = copy_fixture(tmp_path)
    report = write_report(run)
    page = report.html.read_text()
    assert "Ranking of " not in page and html.escape(tune_section.SEARCHES_TITLE) not in page
    assert not any(f.name.startswith("tune-") for f in report.figures)


def test_a_tune_json_no_capbench_wrote_is_a_note_and_the_report_goes_on(tmp_path):
    run, _tune = tune_folder(tmp_path)
    path = run / "tune" / "tune.json"
    (summary,) = json.loads(path.read_text())
    for bad, words in (
            ("{", "not JSON"),
            ("[]", "is not a list of tune summaries"),
            (json.dumps([{**summary, "schema": 99}]), "schema 99, this capbench reads 1"),
            (json.dumps([{k: v for k, v in summary.items() if k != "schema"}]), "before tune.json had a schema"),
            (json.dumps([{**summary, "ranking": "first"}]), "ranking is \"first\""),
            (json.dumps([{**summary, "spent_s": -1}]), "below zero"),
            (json.dumps([{**summary, "best_line": "best \x1b[2J"}]), "control character"),
            (json.dumps([{**summary, "unit": "furlongs"}]), "unit is \"furlongs\""),
            (json.dumps([{**summary, "ranking": []}]), "its ranking is empty")):
        path.write_text(bad)
        report = write_report(run)
        (note,) = [n for n in report.notes if "tune" in n]
        assert words in note and note.endswith("the tune's ranking is left out."), (bad[:60], note)
        assert "capbench tune afp-v3" not in report.html.read_text()
