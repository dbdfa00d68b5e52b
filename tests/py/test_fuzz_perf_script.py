"""Fuzz: `perf script` output read by --profile (capbench.profile.perf_script). perf prints what
processes named themselves (a comm may hold any byte but NUL) and what objects are called, so the
parser meets text nobody here controls. Each input parses without an exception or a hang; every
name it keeps is printable; the real samples of an input survive garbage lines around them; and
the analysis of whatever was read adds up."""

from pathlib import Path

from capbench.profile import analysis
from capbench.profile.analysis import Role
from capbench.profile.perf_script import parse
from fuzzing import no_hang
from hypothesis import given
from hypothesis import strategies as st

REAL = (Path(__file__).parent / "fixtures" / "perf-script" / "afp-v3-64.txt").read_text()
BLOCKS = [b for b in REAL.split("\n\n") if b.strip()]
LINE_PARTS = st.sampled_from(["\t", " ", "[000]", "[001]", "0/0", "123/456", "1000000", "ffffffff81000000",
                              "(", ")", "([kernel.kallsyms])", "[unknown]", ";", "\n", "\x00", "\x1b", "é", "-1/-1"])
GARBAGE = st.lists(st.one_of(st.text(max_size=40), st.lists(LINE_PARTS, max_size=8).map("".join)), max_size=6)


def printable(text: str) -> bool:
    return not any(ord(c) < 0x20 or ord(c) == 0x7F for c in text)


def check(parsed) -> None:
    for s in parsed.samples:
        assert printable(s.comm)
        assert all(printable(f.symbol) and printable(f.dso) for f in s.frames)
    roles = {"receive": Role(cpus=(0, 1)), "counter": Role(cpus=(1,), pids=frozenset({0}))}
    rec = analysis.profile_record(parsed.samples, roles, packets=10, period_ns=1000, hz=1000.0, window_s=1.0,
                                  profiler_pid=None, facts={})
    rx = rec["roles"]["receive"]
    if rx["samples"]:
        assert abs(sum(rx["shares_pct"].values()) - 100) < 0.01
    stacks = analysis.folded(parsed.samples, roles)
    assert sum(stacks.values()) == len(parsed.samples)
    assert all("\n" not in k for k in stacks)


@given(st.text(max_size=400))
def test_any_text(text):
    with no_hang():
        check(parse(text.splitlines()))


@given(st.lists(st.one_of(st.sampled_from(BLOCKS), GARBAGE.map("\n".join)), max_size=8))
def test_real_samples_among_garbage(parts):
    """Garbage between blank-line-separated blocks costs no real sample: each real block's header
    starts a sample with the block's frames."""
    text = "\n\n".join(parts)
    with no_hang():
        parsed = parse(text.splitlines())
    check(parsed)
    real = [p for p in parts if p in BLOCKS]
    assert len(parsed.samples) >= len(real)
    for block in real:
        header = block.splitlines()[0]
        frames = len(block.splitlines()) - 1
        assert any(s.comm == header.split()[0] and len(s.frames) == frames for s in parsed.samples)
