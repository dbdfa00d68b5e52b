"""The report end to end: a real run writes it, headless Chromium opens report.html and
compare.html, and they show their figures and tables without a console error."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from chromium_page import PageVisit, chromium_binary, visit
from e2e_env import REPO, assert_run_measured, missing_prerequisite, run_capbench

sys.path.insert(0, str(REPO / "tests" / "py"))
from report_files import DEFAULT_RUN, FIXTURE, PNG_MAGIC  # noqa: E402

needs_chromium = pytest.mark.skipif(chromium_binary() is None,
                                    reason="chromium is not installed: apt-get install chromium (`make deps` does)")
needs_testbed = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))

# What the page shows once loaded: every inlined figure (and the key of markers) with its rendered and
# natural size (its viewBox), the tables, the headings, the figures not drawn, the page's height.
PAGE_CHECK = """JSON.parse(JSON.stringify({
  figures: [...document.querySelectorAll('figure.plot, div.key')].map(f => {
    const svg = f.querySelector('svg'); const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    const vb = svg && svg.viewBox.baseVal ? svg.viewBox.baseVal : {width: 0, height: 0};
    return {id: f.id || f.className, width: box.width, height: box.height, natural: [vb.width, vb.height],
            texts: svg ? svg.querySelectorAll('text').length : 0, bottom: box.bottom + window.scrollY};
  }),
  tables: [...document.querySelectorAll('table.data')].map(t => t.querySelectorAll('tbody tr').length),
  headings: [...document.querySelectorAll('h2, h3')].map(h => h.textContent),
  skipped: [...document.querySelectorAll('.skipped')].map(e => e.querySelector('summary').textContent),
  height: document.documentElement.scrollHeight,
  width: document.documentElement.scrollWidth,
  external: [...document.querySelectorAll('[src], [href]')].map(e => e.getAttribute('src') || e.getAttribute('href'))
}))"""

WIDTH = 1300  # the page is read at this width: about two screens of it hold a short run's whole report


def open_page(path: Path, shot: Path) -> PageVisit:
    v = visit(path.resolve().as_uri(), PAGE_CHECK, width=WIDTH)
    shot.write_bytes(v.screenshot)
    assert v.errors == [], v.errors
    assert v.requests == [path.resolve().as_uri()], v.requests  # nothing but the page itself was loaded
    assert v.evaluated["external"] == []
    assert v.screenshot[:8] == PNG_MAGIC and len(v.screenshot) > 50_000  # a page with figures, not a blank one
    for f in v.evaluated["figures"]:  # every image drawn: a natural size, shown at a readable one
        assert f["natural"][0] > 0 and f["natural"][1] > 0 and f["width"] > 0 and f["height"] > 0, f
    assert v.evaluated["width"] <= WIDTH  # nothing wider than the window
    return v


def figure_sizes(v: PageVisit) -> dict:
    figures = {f["id"]: f for f in v.evaluated["figures"]}
    key = figures.pop("key")
    assert key["width"] > 800 and key["texts"] >= 2, key  # the markers' key, across the page
    for f in figures.values():
        assert f["width"] > 500 and f["height"] > 200 and f["texts"] > 10, f  # two to a row, no smaller
    return figures


@needs_chromium
def test_the_console_check_sees_errors(tmp_path):
    """The control: a page with an error, an exception and a missing image must fail the check."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><p>x</p><img src="missing.png"><script>console.error("boom"); nosuch();</script>')
    v = visit(bad.as_uri(), "document.querySelectorAll('p').length")
    assert v.evaluated == 1
    assert any("boom" in e for e in v.errors)
    assert any("nosuch" in e for e in v.errors)
    assert any("ERR_FILE_NOT_FOUND" in e for e in v.errors)


def stored_run_page(stored: Path, tmp_path: Path) -> PageVisit:
    """`capbench report` of a copy of a stored run, its report.html opened in Chromium."""
    run = tmp_path / "run"
    shutil.copytree(stored, run)
    p = run_capbench("report", str(run))
    assert p.returncode == 0, p.stderr
    return open_page(run / "report" / "report.html", tmp_path / "report.png")


@needs_chromium
def test_report_of_the_stored_run_in_chromium(tmp_path):
    v = stored_run_page(FIXTURE, tmp_path)
    assert set(figure_sizes(v)) == {"fig-throughput", "fig-load", "fig-loss_layers"}
    assert v.evaluated["tables"][:2] == [3, 3]  # pcap and afp-v3, three frame lengths each
    (skipped,) = v.evaluated["skipped"]  # the figures without data: one line naming the seven (the MLR figure since issue 30)
    assert skipped.startswith("Not drawn (no data in this run): ") and skipped.count(",") == 6, skipped
    # about two screens at 1300 px, as a real run's (the answer's one line on lower bounds and the loss
    # figure's row for the capture's declared layers, issues 28 and 29, took ~70 px)
    assert v.evaluated["height"] < 2_500, v.evaluated["height"]
    for heading in ("Summary", "Best backend per frame length", "Run", "Tables", "Figures"):
        assert heading in v.evaluated["headings"]


@needs_chromium
def test_the_default_run_s_report_fits_in_about_two_screens(tmp_path):
    """`capbench run` with no option: 26 trials (pcap and afp-v3, 13 frame lengths), from its stored records."""
    v = stored_run_page(DEFAULT_RUN, tmp_path)
    figures = figure_sizes(v)
    assert set(figures) == {"fig-throughput", "fig-load", "fig-loss_layers", "fig-latency"}
    assert v.evaluated["tables"][:2] == [13, 13]  # in the page, folded under their titles
    # the summary and every figure in the first screen and a half, the whole page in about two
    assert max(f["bottom"] for f in figures.values()) < 1_500, figures
    assert v.evaluated["height"] <= 2_100, v.evaluated["height"]
    headings = v.evaluated["headings"]
    assert headings.index("Figures") < headings.index("Tables") < headings.index("Run")


@needs_chromium
@needs_testbed
def test_a_real_run_writes_a_report_that_chromium_shows(tmp_path):
    results = tmp_path / "results"
    p = run_capbench("run", "--backends", "afp-v3,pcap", "--sizes", "64,1518", "--duration", "1",
                     "--results", str(results), timeout=300)
    assert_run_measured(p)
    (run,) = results.iterdir()
    assert f"report: {run / 'report' / 'report.html'}" in p.stderr
    for name in ("tables.txt", "tables.md", "trials.csv", "throughput.png", "throughput.svg", "load.svg",
                 "loss_layers.svg"):
        assert (run / "report" / name).stat().st_size > 0, name
    v = open_page(run / "report" / "report.html", tmp_path / "report.png")
    # A real run's trials carry the counter's latency percentiles, so the latency figure is drawn too.
    assert set(figure_sizes(v)) == {"fig-throughput", "fig-load", "fig-loss_layers", "fig-latency"}
    assert v.evaluated["tables"][:2] == [2, 2]
    # about two screens at 1300 px for the whole report, its four figures and its tables (the host
    # probe's line and the best table's Trials column, issue 28, took ~50 px of it); a run the host
    # disturbed says so and why in its rows, notes and loss lines (~250 px measured beside another run);
    # a generator that fell short says so in its rows and in the advice how to measure the lower
    # bounds (2,505 px measured with both lengths short)
    trials = [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines()]
    extra = (400 if any(t["disturbed"] for t in trials) else 0) + (200 if any(t["invalid_offered_load"] for t in trials)
                                                                   else 0)
    assert v.evaluated["height"] < 2_500 + extra, v.evaluated["height"]
    # the summary and every figure first: the tables and the run's settings follow them
    assert max(f["bottom"] for f in v.evaluated["figures"]) < 2_000, v.evaluated["figures"]
    headings = v.evaluated["headings"]
    assert headings.index("Figures") < headings.index("Tables") < headings.index("Run")

    p = run_capbench("run", "--backends", "afp-v3", "--sizes", "1518", "--duration", "1", "--no-report",
                     "--results", str(tmp_path / "second"), timeout=300)
    assert_run_measured(p)
    (second,) = (tmp_path / "second").iterdir()
    assert not (second / "report").exists()

    p = run_capbench("compare", str(run), str(second), "--out", str(tmp_path / "cmp"))
    assert p.returncode == 0, p.stderr
    assert "1 measurement in common, 3 only in A" in " ".join(p.stdout.split())  # lines wrap at 140
    v = open_page(tmp_path / "cmp" / "compare.html", tmp_path / "compare.png")
    assert [f["id"] for f in v.evaluated["figures"]] == ["fig-compare"]
