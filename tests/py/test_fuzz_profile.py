"""Fuzz: what the report reads of a profile (--profile), all of it input: the folded stacks a flame
graph is drawn from (profiles/*.folded), and the `profile` of a trial record. Each input ends in a
drawing or a table, never a traceback or a hang."""

import dataclasses
import json
from pathlib import Path

import matplotlib.pyplot as plt
from capbench.report import flamegraph, plots, profiles
from capbench.report.load import Trial, load_run
from fuzzing import JSON, examples, mutated, no_hang
from hypothesis import example, given, settings
from hypothesis import strategies as st

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run-profile"
FOLDED = sorted((FIXTURE / "profiles").glob("*.folded"))
REAL_LINES = [line for path in FOLDED for line in path.read_text().splitlines()]
RUN = load_run(FIXTURE)

# A frame: a real one, or any text (control characters, ";", spaces, "_[k]" marks, digits).
FRAME = st.one_of(st.sampled_from(sorted({f for line in REAL_LINES for f in line.rsplit(" ", 1)[0].split(";")})),
                  st.text(max_size=12), st.sampled_from(["", " ", "_[k]", "[unknown]_[k]", "a b 12", "$x$", "\x1b[2J"]))
COUNT = st.one_of(st.integers(-5, 10 ** 6).map(str), st.sampled_from(["", "0", "9" * 15, "9" * 16, "1e3", "٣", "+1",
                                                                        " 12", "12 "]))
LINE = st.one_of(st.sampled_from(REAL_LINES),
                 st.builds(lambda frames, count: ";".join(frames) + " " + count, st.lists(FRAME, max_size=6), COUNT),
                 st.text(max_size=40))


def check_parsed(lines, folded):
    assert len(folded.stacks) + folded.skipped == sum(1 for x in lines if x.rstrip("\r\n").strip())
    for frames, n in folded.stacks:
        assert 1 <= len(frames) <= flamegraph.MAX_DEPTH and 0 < n < 10 ** flamegraph.COUNT_DIGITS
        for f in frames:
            assert f.strip() and len(f) <= flamegraph.NAME_MAX
            assert not any(ord(c) < 0x20 or ord(c) == 0x7f for c in f), f


@given(st.lists(LINE, max_size=30))
@example(["CPU 1;comm;a_[k] 3", "CPU 1;comm;;b 2", "CPU 1 7", ";x 1", "x; 1", "x 0", "x -1", "x 1.5", "x٣ ٣"])
@example(["x" * 10_000 + " 1", ";".join(["f"] * 1000) + " 1"])
def test_fuzz_folded_lines(lines):
    with no_hang():
        folded = flamegraph.parse(lines)
        check_parsed(lines, folded)
        lay = flamegraph.layout(folded)
    assert lay.total == folded.total and len(lay.boxes) <= flamegraph.MAX_BOXES
    small = flamegraph.layout(folded, max_boxes=5)  # the widest five, each frame's parent with it
    assert len(small.boxes) == min(5, len(lay.boxes)) and small.crowded == len(lay.boxes) - len(small.boxes)
    assert all(b.depth == 0 or any(p.depth == b.depth - 1 and p.start <= b.start < p.start + p.count
                                   for p in small.boxes) for b in small.boxes)
    rows: dict[int, int] = {}
    for b in lay.boxes:
        assert b.count >= flamegraph.MIN_SHARE * lay.total and 0 <= b.start and b.start + b.count <= lay.total
        rows[b.depth] = rows.get(b.depth, 0) + b.count
    assert all(width <= lay.total for width in rows.values())


@settings(max_examples=examples(0.02))
@given(st.lists(LINE, min_size=1, max_size=12))
@example(["CPU 0;$a$;b_[k];\\frac{1}{0} 5", "CPU 0;{x};y 1"])  # names matplotlib must not read as mathtext
def test_fuzz_folded_drawn(lines):
    folded = flamegraph.parse(lines)
    with no_hang():
        lay = flamegraph.layout(folded)
        fig = flamegraph.draw(lay, flamegraph.title("fuzz", lay, folded, 1e6, 997.0))
        fig.canvas.draw()
        plt.close(fig)


# A profiled record with its profile, or its receive role, changed in up to four fields.
PROFILES = [t.result.profile for t in RUN.trials]
PROFILE = st.one_of(st.sampled_from(PROFILES).flatmap(mutated), JSON,
                    st.sampled_from(PROFILES).flatmap(lambda p: mutated(p["roles"]["receive"]).map(
                        lambda r: p | {"roles": p["roles"] | {"receive": r}})),
                    st.sampled_from(PROFILES).flatmap(lambda p: st.dictionaries(
                        st.sampled_from(["receive", "counter"]), JSON, max_size=2).map(
                        lambda roles: p | {"roles": roles})))


def with_profiles(values):
    """The fixture's trials with these profiles (a value that is no object: not profiled)."""
    return [Trial(dataclasses.replace(t.result, profile=v if isinstance(v, dict) else {}), t.record, t.method)
            for t, v in zip(RUN.trials, values)]


@settings(max_examples=examples(0.3))
@given(st.lists(PROFILE, min_size=1, max_size=4))
@example([{"roles": {"receive": {"groups_pct": {"app": 1e308}, "samples": 2 ** 70, "expected_samples": -1}}}])
@example([{"hz": float("nan"), "period_ns": 10 ** 400, "folded": 7, "warnings": "x"}])
def test_fuzz_profile_records(values):
    trials = with_profiles(values)
    with no_hang():
        for row in profiles.rows(trials):
            assert len(row.cells) == len(profiles.HEADERS)
        profiles.notes(trials)
        profiles.sampling_text({"profile": json.loads(json.dumps(values[0]))} if isinstance(values[0], dict) else {},
                               trials)
        for _key, found in profiles.receive_by_settings(trials).items():
            for _t, r in found:
                assert 0 <= r.sampled <= 1 and all(0 <= r.window_pct(g) for g in r.groups_pct)


@settings(max_examples=examples(0.02))
@given(st.lists(PROFILE, min_size=1, max_size=4))
def test_fuzz_profile_figure(values):
    with no_hang():
        drawn = plots.cpu_time(with_profiles(values))
        if isinstance(drawn, plots.Drawn):
            drawn.figure.canvas.draw()
            plt.close(drawn.figure)
