"""One identity for a measurement (report.keys): every setting keeps its series apart, in the
terminal tables, tables.md, trials.csv, the figures and compare; repetitions merge."""

import csv
import dataclasses
import io
import itertools
import json

import pytest
from capbench.report import tables
from capbench.report import compare, keys, plots, stats, tables_md
from capbench.report.load import Trial, load_run
from capbench.trial.measure import TrialResult
from records import make_result
from report_files import trial, write_run

BASE_STEP = "iperf|afp-v3|64|pin=A:A|load=touch|procs=1|rep=1"


def base(**kw) -> Trial:
    """An iperf trial of the step above; keyword arguments change record fields (also fields
    this version's TrialResult does not have yet, through the record)."""
    own = {k: v for k, v in kw.items() if k in {f.name for f in dataclasses.fields(TrialResult)}}
    rest = {k: v for k, v in kw.items() if k not in own}
    return trial(**({"backend": "afp-v3", "step": BASE_STEP} | own), record=rest)


# One variant per setting of a measurement: (what, the record fields it changes).
VARIANTS = [
    ("method", {"method": "sweep"}),
    ("backend", {"backend": "pcap"}),
    ("frame length", {"frame_len": 128}),
    ("rate", {"rate": "50%"}),
    ("link", {"link_bps": 1e10}),
    ("engine", {"gen_engine": "afpacket"}),
    ("app load", {"app_load": "spin:2000"}),
    ("generator CPU", {"gen_cpu": 1}),
    ("kernel receive CPU", {"kernel_rx_cpu": 0}),
    ("counter CPU", {"cap_cpu": 0}),
    ("pin", {"step": BASE_STEP.replace("pin=A:A", "pin=auto")}),
    ("processes", {"procs": 2, "proc_cpus": (1, 1)}),
    ("processes' CPUs", {"procs": 2, "proc_cpus": (1, 0)}),
    ("ring size", {"ring_bytes": 4 << 20}),
    ("another ring size", {"ring_bytes": 64 << 20}),
    ("backend options", {"backend_args": "--block-size 65536"}),
    ("a backend knob", {"knobs": {"afp-v3:block-size": "4M"}}),
    ("another backend knob", {"knobs": {"afp-v3:block-count": "8"}}),
    ("receive mode", {"rx_mode": "napi"}),
    ("NAPI thread priority", {"rx_mode": "napi", "napi_sched": "fifo:50"}),
    ("cpumap ring thread priority", {"rx_mode": "cpumap", "napi_sched": "fifo:50"}),
    ("groups", {"step": BASE_STEP.replace("|rep=1", "|groups=10x1000+0.5s|rep=1")}),
    ("length mix", {"size": "imix:seed"}),
]


def variants() -> list[Trial]:
    return [base()] + [base(**fields) for _what, fields in VARIANTS]


def test_every_setting_is_a_measurement_of_its_own():
    ts = variants()
    by_key = {}
    for (what, _f), t in zip([("base", {})] + VARIANTS, ts):
        k = keys.settings_key(t)
        assert k not in by_key, f"{what} merged with {by_key.get(k)}"
        by_key[k] = what
    # and every one reads apart in words (compare's "only in A" lists, error messages)
    assert len({k.text() for k in by_key}) == len(ts)


def test_no_two_settings_merge_anywhere():
    ts = variants()
    n = len(ts)
    # the figures and compare group by the same keys
    assert len(stats.iperf_groups(t for t in ts if t.method == "iperf")) == n - 1  # one variant is a sweep
    iperf = [t for t in ts if t.method == "iperf"]
    # tables.md: a table per series (frame length and rate are rows of it), a row per measurement
    md = tables_md.iperf_tables(iperf)
    assert sum(len(t.rows) for t in md) == len(iperf)
    assert len({t.title for t in md}) == len(md)
    # the terminal tables, from the records as a run prints them
    results = [dataclasses.replace(t.result, **{k: v for k, v in t.record.items()
                                                 if k in {f.name for f in dataclasses.fields(TrialResult)}})
               for t in iperf]
    known = [r for r, t in zip(results, iperf) if keys.settings_key(r) == keys.settings_key(t)]
    assert len(tables.repetitions(known)) == len(known)
    # legends: one label per series, none twice
    labels = keys.series_labels(keys.series_key(t) for t in ts)
    assert len(set(labels.values())) == len(labels) == n - 2  # frame length and rate are no series of their own


def test_compare_matches_only_the_same_settings(tmp_path):
    for (what, fields_), (other, other_fields) in itertools.combinations(VARIANTS, 2):
        assert keys.settings_key(base(**fields_)) != keys.settings_key(base(**other_fields)), (what, other)
    a = write_run(tmp_path / "a", [make_result(backend="afp-v3", ring_bytes=4 << 20)])
    b = write_run(tmp_path / "b", [make_result(backend="afp-v3", ring_bytes=64 << 20)])
    with pytest.raises(Exception, match="no measurement in common.*ring 4 MiB"):
        compare.compare(load_run(a), load_run(b))


def test_repetitions_of_one_step_merge():
    one = base(started_at="2026-01-01T00:00:00.000Z", repeat=1, received=7_000_000, cap_cpus_seen=(1,))
    two = base(started_at="2026-01-01T00:00:09.000Z", repeat=2, step=BASE_STEP.replace("rep=1", "rep=2"),
               received=7_100_000, cap_cpus_seen=(0,), worker_cpus=(0, 1))
    assert keys.settings_key(one) == keys.settings_key(two)
    (g,) = stats.iperf_groups([one, two]).values()
    assert len(g.trials) == 2
    assert len(tables.repetitions([one.result, two.result])) == 1
    (t,) = tables_md.iperf_tables([one, two])
    assert len(t.rows) == 1 and "n=2" in t.rows[0][3]  # Captured, after Offered and Sent


def test_old_records_mean_the_defaults():
    """A record written before rx_mode, napi_sched, ring_bytes or backend_args existed is the same
    measurement as one that names their defaults."""
    t = base()
    old = Trial(t.result, {k: v for k, v in t.record.items() if k not in ("ring_bytes", "backend_args")}, "iperf")
    named = base(rx_mode="rps", napi_sched="", ring_bytes=0, backend_args="")
    assert keys.settings_key(old) == keys.settings_key(t) == keys.settings_key(named)
    assert keys.settings_key(base(rx_mode="napi")) != keys.settings_key(t)


def test_the_axes_are_declared_once():
    names = [a.name for a in keys.AXES]
    assert len(names) == len(set(names)) and len({a.title for a in keys.AXES}) == len(names)
    for axis in keys.AXES:  # every one in the words of compare's help and error messages
        assert axis.title in keys.IDENTITY_TEXT


def test_titles_show_the_settings():
    t = base(ring_bytes=4 << 20, backend_args="--workers 2", rx_mode="napi", napi_sched="fifo:50")
    title = tables_md.series_title(keys.series_key(t), "afp-v3", [t.result])
    assert title == ("iperf: afp-v3 (1g link, A:A (gen 0, rx 1, app 1), engine xdp, app load touch, ring 4 MiB, "
                     "backend args --workers 2, rx mode napi, NAPI thread fifo:50)")


def test_titles_show_the_cpus_really_used():
    """Defect: `fanout --workers 2` ran a worker on the generator's CPU while the title said
    "gen 0, rx 1, app 1"."""
    fanout = base(backend="fanout", backend_args="--workers 2", cap_cpus_seen=(0, 1), worker_cpus=(0, 1))
    assert keys.cpus_used([fanout]) == "workers on CPUs 0, 1; CPU 0 is the generator's"
    (t,) = tables_md.iperf_tables([fanout])
    assert "A:A (gen 0, rx 1, app 1; workers on CPUs 0, 1; CPU 0 is the generator's)" in t.title
    # the counter where it was placed, or a record that does not say: nothing to add
    assert keys.cpus_used([base(cap_cpus_seen=(1,))]) == "" == keys.cpus_used([base()])
    # not pinned (--pin auto): where the scheduler ran it
    auto = base(cap_cpu=None, kernel_rx_cpu=None, cap_cpus_seen=(0,), step=BASE_STEP.replace("A:A", "auto"))
    assert keys.cpus_used([auto]) == "read threads ran on CPU 0; CPU 0 is the generator's"
    r = dataclasses.replace(make_result(backend="afp-v3"), cap_cpus_seen=(0,))
    text = io.StringIO()
    from rich.console import Console

    tables.print_tables([r], Console(file=text, width=200))
    assert "app 1; read threads ran on CPU 0; CPU 0 is the generator's)" in " ".join(text.getvalue().split())


def test_trials_csv_has_the_fields_and_names_of_trials_jsonl(tmp_path):
    r = make_result(backend="fanout", backend_args="--workers 2", ring_bytes=1 << 20, procs=2, proc_cpus=(1, 0),
                    latency={"p50_ns": 1200, "max_ns": 9000})
    run = write_run(tmp_path / "run", [r])
    record = json.loads((run / "trials.jsonl").read_text())
    rows = list(csv.DictReader(io.StringIO(tables_md.csv_text(load_run(run).trials))))
    assert list(rows[0]) == [*record, "note"]  # the same names, in the same order
    row = rows[0]
    assert row["backend_args"] == "--workers 2" and row["ring_bytes"] == str(1 << 20)
    assert json.loads(row["proc_cpus"]) == [1, 0] and json.loads(row["latency"]) == {"p50_ns": 1200, "max_ns": 9000}
    assert json.loads(row["raw"]) == record["raw"] and row["app_load"] == ""  # None: an empty cell
    assert tuple(f.name for f in dataclasses.fields(TrialResult)) == tuple(sorted(
        tables_md.RECORD_FIELDS, key=[f.name for f in dataclasses.fields(TrialResult)].index))


def test_figures_draw_a_line_per_setting(tmp_path):
    ts = [base(frame_len=n, ring_bytes=ring, received=7_000_000 - ring // 4096) for ring in (0, 4 << 20)
          for n in (64, 512)]
    drawn = plots.throughput(ts)
    (legend,) = drawn.figure.legends  # one legend under both panels
    labels = [t.get_text() for t in legend.get_texts()]
    assert "afp-v3 defaults" in labels and "afp-v3 ring 4 MiB" in labels
    assert "really used" not in drawn.caption
    fanout = [base(backend="fanout", frame_len=n, worker_cpus=(0, 1)) for n in (64, 512)]
    assert "fanout: workers on CPUs 0, 1; CPU 0 is the generator's." in plots.throughput(fanout).caption


def test_a_report_keeps_runs_of_two_receive_modes_apart(tmp_path):
    """The terminal tables of `capbench report` read the records as written: a field this
    TrialResult may not know yet (rx_mode) still keeps its tables apart."""
    from capbench.report.writer import terminal_tables

    records = [make_result(backend="afp-v3").to_record() | extra
               for extra in ({}, {"rx_mode": "rps"}, {"rx_mode": "napi", "napi_sched": "fifo:50"})]
    run = tmp_path / "run"
    run.mkdir()
    (run / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "run.json").write_text(json.dumps({"schema": 1, "status": "complete"}))
    text = " ".join(terminal_tables(load_run(run), width=200).split())
    assert text.count("Iperf-like capture throughput: afp-v3") == 2
    assert "rx mode napi, NAPI thread fifo:50)" in text


def test_titles_name_the_receive_thread_of_the_trials_model():
    """The napi_sched axis is the scheduling of the model's own thread: a cpumap trial's is the cpumap
    ring's thread, never "NAPI thread"."""
    napi = keys.series_key(base(rx_mode="napi", napi_sched="fifo:50")).title()
    cpumap = keys.series_key(base(rx_mode="cpumap", napi_sched="fifo:50")).title()
    assert "NAPI thread fifo:50" in napi and "cpumap" not in napi.replace("rx mode cpumap", "")
    assert "cpumap ring's thread fifo:50" in cpumap and "NAPI" not in cpumap, cpumap


def test_legend_labels_name_only_what_tells_the_series_apart():
    # a tune's configurations share their receive model and their rung's run length: the labels
    # name the knobs that differ, and the configuration that set none says "defaults"
    shared = (("rx mode", "cpumap"), ("run", "1 s"))
    common = dict(method="iperf", backend="afp-v3", link="1g", engine="xdp", app_load="touch",
                  placement="A:A (gen 0, rx 1, app 1)")
    defaults = keys.SeriesKey(**common, extra=shared)
    ring = keys.SeriesKey(**common, extra=(("ring", "4 MiB"), *shared))
    both = keys.SeriesKey(**common, extra=(("ring", "4 MiB"), *shared, ("rx ring", "16 frames")))
    labels = keys.series_labels([defaults, ring, both])
    assert labels == {defaults: "afp-v3 defaults", ring: "afp-v3 ring 4 MiB",
                      both: "afp-v3 ring 4 MiB rx ring 16 frames"}
