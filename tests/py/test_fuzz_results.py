"""Fuzz: the result files a report, a comparison and --resume read (trials.jsonl, searches.jsonl,
run.json), written into a temporary results folder and read by the same code as `capbench report`.
Each input ends in a report (impossible records left out and counted) or one UsageError line."""

import dataclasses
import json
import math
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
from capbench.cli.parser import build_parser
from capbench.cli.run import _campaign_of, resumable_run
from capbench.trial import accounting
from capbench.errors import UsageError
from capbench.report import answers, plots, tables_md, writer
from capbench.report.load import load_run
from capbench.campaign.results import RUN_FILE, SEARCHES_FILE, TRIALS_FILE, read_outcomes, scan_trials
from capbench.trial.measure import TrialResult
from capbench.trial.record import LayerCount, named_layers
from fuzzing import JSON, clean, examples, mutated, no_hang, one_line, scratch_dir
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parent / "fixtures"
IPERF = FIXTURES / "run-iperf"
RECORDS = [json.loads(x) for x in (IPERF / TRIALS_FILE).read_text().splitlines()]
META = json.loads((IPERF / RUN_FILE).read_text())
BACK2BACK = {"method": "back2back", "backend": "pcap", "frame_len": 64, "link_bps": 1e9, "wire_pps": 1488095.2,
             "trials": 5, "total_trial_s": 1.0, "total_pause_s": 1.0, "max_frames": 1000, "precision_frames": 10,
             "longest_frames": [1000], "mean_frames": 900.0, "min_frames": 800, "mean_burst_s": 0.001,
             "unlimited": False, "bounded_by": None, "notes": []}
OUTCOMES = [json.loads(x) for x in (FIXTURES / "run-searches-a" / SEARCHES_FILE).read_text().splitlines()[:6]]
OUTCOMES.append(BACK2BACK)
DIR = scratch_dir("capbench-fuzz-results-")
COUNTS = ("sent", "delivered", "received", "lost", "backlog_drops", "app_drops")


def jsonl(values) -> bytes:
    return b"".join(v if isinstance(v, bytes) else json.dumps(v).encode() + b"\n" for v in values)


def results_dir(trials: bytes, meta: bytes | None = None, searches: bytes | None = None) -> Path:
    """The one results folder of the harnesses, its files replaced by these."""
    run = DIR / "run"
    run.mkdir(exist_ok=True)
    shutil.rmtree(run / writer.REPORT_DIR, ignore_errors=True)
    (run / TRIALS_FILE).write_bytes(trials)
    (run / RUN_FILE).write_bytes(json.dumps(META).encode() if meta is None else meta)
    if searches is not None:
        (run / SEARCHES_FILE).write_bytes(searches)
    else:
        (run / SEARCHES_FILE).unlink(missing_ok=True)
    return run


def assert_possible(t: TrialResult) -> None:
    """What a trial shown in a report must be: finite numbers, counts of 0 or more, received at most
    sent, lost what the counts give (checked here from the record, not by the loader's own code)."""
    for f in dataclasses.fields(t):
        v = getattr(t, f.name)
        if isinstance(v, float):
            assert math.isfinite(v) and v >= 0, (f.name, v)
    for name, v in [(name, getattr(t, name)) for name in COUNTS] + [(row.layer, row.packets) for row in t.layers]:
        assert isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2 ** 64, (name, v)
    assert t.received <= t.sent and t.lost == t.sent - t.received
    assert 0 <= t.loss_pct <= 100


NUMERIC = [f.name for f in dataclasses.fields(TrialResult) if f.type in ("int", "float", "float | None", "int | None")]


def plausible(record):
    """`record` with some numbers replaced by others of their kind, however extreme (0, 2**64 - 1, 1e300),
    and the account made to add up again: a record the loader accepts, to stress what reads it."""
    def build(changes):
        r = record | {k: (float(v) if isinstance(record.get(k), float) else int(v)) for k, v in changes.items()
                      if isinstance(record.get(k), (int, float)) and not isinstance(record.get(k), bool)}
        r["received"] = min(r["received"], r["sent"])
        # The stored records are of version 1: their named drop fields are their rows.
        acc = accounting.account(**{k: r.get(k, 0) for k in COUNTS if k not in ("lost",)},
                                 layers=[LayerCount(**row) for row in named_layers(r)])
        return r | {"lost": acc.lost, "link_drops": acc.link_drops, "unexplained": acc.unexplained,
                    "loss_pct": acc.loss_pct}
    value = st.one_of(st.sampled_from([0, 1, 2 ** 64 - 1, 2 ** 63]), st.integers(0, 2 ** 64 - 1),
                      st.floats(0, 1e300))
    return st.dictionaries(st.sampled_from(NUMERIC), value, min_size=1, max_size=4).map(build)


# A line of trials.jsonl: a stored record, one changed in up to four fields (any JSON, or extreme
# numbers of the right kind), or any bytes.
TRIAL_LINE = st.one_of(st.sampled_from(RECORDS), st.sampled_from(RECORDS).flatmap(mutated),
                       st.sampled_from(RECORDS).flatmap(plausible),
                       st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ") + b"\n"), JSON)
IMPOSSIBLE = [RECORDS[0] | {"lost": -1e30}, RECORDS[1] | {"sent": 0, "delivered": 0, "received": 99_199},
              RECORDS[2] | {"rx_pps": math.nan}, RECORDS[3] | {"raw": None}, RECORDS[4] | {"napi_cpus_seen": [[1]]}]


@given(st.lists(TRIAL_LINE, max_size=4), st.booleans())
@example([RECORDS[0], *IMPOSSIBLE], False)
@example([b"\xff\xfe\n", RECORDS[0]], True)
@example([RECORDS[0] | {"sent": 10 ** 400}], False)  # formatted as a float: OverflowError
def test_fuzz_trials_jsonl(lines, cut):
    data = jsonl(lines)
    if cut and data:
        data = data[:-1]  # the last line without its newline: what a crash leaves
    run = results_dir(data)
    scan = clean(lambda: scan_trials(run))
    assert not isinstance(scan, UsageError)
    assert len(scan.trials) + len(scan.skipped) == sum(1 for x in data.split(b"\n") if x.strip())
    for t in scan.trials:
        assert_possible(t)
    for s in scan.skipped:
        one_line(s.message)
        assert s.message.startswith(f"{scan.path}:{s.line}: ")


def read_report(run: Path, figures: bool = False, terminal: bool = True):
    """What `capbench report` makes of `run`, without writing the figures' files (the costly part);
    without the terminal's tables (rich: 13 ms) when `terminal` is False."""
    data = clean(lambda: load_run(run))
    event("refused" if isinstance(data, UsageError) else f"report of {len(data.trials)} trials, "
          f"{len(data.skipped)} lines left out, {len(data.outcomes)} answers")
    if isinstance(data, UsageError):
        return data
    for t in data.trials:
        assert_possible(t.result)
    for n in data.notes:
        one_line(n)
    with no_hang():
        if terminal:
            writer.terminal_tables(data)
        writer.markdown_report(data)
        tables_md.csv_text(data.trials)
        page = writer.report_html(data, [])
        if data.skipped:
            assert f"{len(data.skipped)} line" in page  # the count of left-out lines is shown
        if figures:
            found = answers.run_answers(data)
            for spec in plots.FIGURES:
                drawn = spec.draw(data.trials, found)
                if not isinstance(drawn, plots.Skipped):
                    drawn.figure.canvas.draw()  # axis limits and every artist, as saving does
                    plt.close(drawn.figure)
    return data


@settings(max_examples=examples(0.2))
@given(st.lists(TRIAL_LINE, min_size=1, max_size=6))
@example([RECORDS[0], *IMPOSSIBLE])
def test_fuzz_trials_in_a_report(lines):
    read_report(results_dir(jsonl(lines)))


@settings(max_examples=examples(0.03))
@given(st.lists(st.one_of(st.sampled_from(RECORDS), st.sampled_from(RECORDS).flatmap(plausible),
                          st.sampled_from(RECORDS).flatmap(mutated)), min_size=1, max_size=4))
@example([RECORDS[0], RECORDS[2] | {"rx_pps": math.nan}])  # a NaN reached matplotlib's axis limits
def test_fuzz_trials_in_figures(records):
    read_report(results_dir(jsonl(records)), figures=True)


SEARCH_LINE = st.one_of(st.sampled_from(OUTCOMES), st.sampled_from(OUTCOMES).flatmap(mutated),
                        st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ") + b"\n"), JSON)


@given(st.lists(SEARCH_LINE, max_size=4))
@example([b'{"method": "rfc2544", "backend": "pc\xffap"}\n'])  # UnicodeDecodeError at results.py:308
@example([OUTCOMES[0] | {"goals": [None]}, OUTCOMES[0] | {"throughput_pps": "x"}])
def test_fuzz_searches_jsonl(lines):
    run = results_dir(jsonl(RECORDS), searches=jsonl(lines))
    skipped = []
    outcomes = clean(lambda: read_outcomes(run, skipped, check=answers.check_outcome))
    assert not isinstance(outcomes, UsageError)
    assert len(outcomes) + len(skipped) == sum(1 for x in jsonl(lines).split(b"\n") if x.strip())
    with no_hang():
        answers.answers_of([], outcomes)  # every answer read as the report reads it


@settings(max_examples=examples(0.2))
@given(st.lists(SEARCH_LINE, min_size=1, max_size=4))
def test_fuzz_searches_in_a_report(lines):
    read_report(results_dir(jsonl(RECORDS[:2]), searches=jsonl(lines)))


RUN_JSON = st.one_of(mutated(META).map(lambda m: json.dumps(m).encode()), JSON.map(lambda v: json.dumps(v).encode()),
                     st.binary(max_size=60))


@given(RUN_JSON)
@example(json.dumps(META | {"command": [1, 2], "kernel": "6.18", "settings": [], "testbed": 5}).encode())
@example(b'{"command": ["capbench", "run", "\xff"]}')  # non-UTF-8 run.json under --resume
@example(json.dumps(META | {"status": "interrupted", "command": ["capbench", "run", "--duration", "9" * 99]}).encode())
@example(json.dumps(META | {"status": "interrupted", "command": ["capbench", "run", "--help"]}).encode())
@example(json.dumps(META | {"status": "interrupted", "command": ["capbench", "report", "x"]}).encode())
def test_fuzz_run_json(meta):
    # Trials that name their campaign step, so that --resume reads on to the command or campaign.
    run = results_dir(jsonl([r | {"step": f"iperf|{r['backend']}|{r['frame_len']}|pin=A:A|load=touch|procs=1|rep=1"}
                             for r in RECORDS[:2]]), meta=meta)
    data = read_report(run, terminal=False)  # the terminal's tables read no run.json
    if not isinstance(data, UsageError):
        writer.metadata_groups(data)
    resumed = clean(lambda: resumable_run(run))
    if not isinstance(resumed, UsageError):
        assert isinstance(resumed, dict)
        if resumed.get("status") != "complete":  # what `run --resume` reads before it needs root
            args = build_parser().parse_args(["run", "--resume", str(run)])
            clean(lambda: _campaign_of(args))
