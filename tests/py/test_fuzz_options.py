"""Fuzz: the option parsers capbench runs on what a user types (rates, durations, sizes, rings,
links, app loads). Each input ends in a value within its bounds or one UsageError line."""

import math

from capbench import options, rates
from capbench.campaign import matrix as campaign
from capbench.errors import UsageError
from fuzzing import clean
from hypothesis import example, given
from hypothesis import strategies as st

NUMBER_TEXT = st.one_of(
    st.from_regex(r"\A[0-9]{0,30}(\.[0-9]{0,10})?\Z"), st.sampled_from(["9" * 400, "1e11", "inf", "nan", "-1", ""]),
    st.text(max_size=30))
UNITS = st.sampled_from(["", "pps", "kpps", "mpps", "gpps", "k", "m", "g", "bps", "gbps", "%", "s", "ms", "m", "min",
                         "h", "b", "kb", "mib", "x"])
OPTION = st.one_of(st.builds(lambda n, sp, u: n + sp + u, NUMBER_TEXT, st.sampled_from(["", " "]), UNITS),
                   st.text(max_size=40))


@given(OPTION)
@example("9" * 400 + "pps")  # was inf pps, handed to the generator as "infpps"
@example("1" * 400 + "m")
@example("0.00001m")
def test_fuzz_rate(text):
    r = clean(lambda: rates.parse_rate(text))
    if isinstance(r, UsageError):
        return
    assert math.isfinite(r.value) and r.value >= 0
    pps = r.pps(64, 100e9)
    assert pps is None or 0 < pps <= rates.MAX_RATE_PPS or r.kind == "pct"
    again = rates.parse_rate(r.text)  # its text reads back (0.00001m was written 1e-05m, which did not)
    assert again.kind == r.kind and again.text == r.text and math.isclose(again.value, r.value)


@given(OPTION, st.booleans())
@example("100000000000", False)  # --duration 1e11 overflowed duration_s * 1e9 in capbench-gen
@example("9" * 5000, False)
def test_fuzz_duration(text, allow_zero):
    d = clean(lambda: rates.parse_duration(text, allow_zero=allow_zero))
    if not isinstance(d, UsageError):
        assert math.isfinite(d) and (d >= 0 if allow_zero else d > 0) and d <= rates.MAX_DURATION_S


@given(st.one_of(st.lists(OPTION, min_size=1, max_size=4).map(",".join), st.text(max_size=40)))
@example("dist:/dev/zero")
@example("trace:/tmp")
@example("dist:" + "a" * 5000)
@example("64,dist:\0")
@example("1" * 5000)
@example("random:" + "1" * 5000 + "-2")  # int() of 5,000 digits: ValueError, a traceback
def test_fuzz_sizes(text):
    sizes = clean(lambda: rates.parse_sizes(text))
    if not isinstance(sizes, UsageError):
        assert sizes and all(isinstance(s, str) or rates.FRAME_MIN_B <= s <= 1518 for s in sizes)


@given(OPTION)
def test_fuzz_ring(text):
    ring = clean(lambda: campaign.parse_ring(text))
    if not isinstance(ring, UsageError):
        assert 4096 <= ring <= campaign.MAX_RING


@given(OPTION)
def test_fuzz_link_and_app_load(text):
    link = clean(lambda: rates.parse_link(text))
    assert isinstance(link, UsageError) or link in rates.LINKS_BPS.values()
    clean(lambda: campaign.check_app_load(text))
    clean(lambda: campaign.check_pin(text))


@given(st.one_of(NUMBER_TEXT, st.from_regex(r"\A\s*[+-]?[0-9_]{0,25}\s*\Z")), st.integers(0, 10), st.integers(0, 2**32))
@example("٣", 0, 10)  # a digit of another script: int() takes it
@example("1_0", 0, 100)
@example("+5", 0, 10)
@example("0" * 40 + "7", 0, 10)
def test_fuzz_whole_number(text, lo, hi):
    got = options.whole_number(text, lo, hi)
    if got is None:
        assert not (text.strip().isascii() and text.strip().isdigit() and lo <= int(text.strip()) <= hi)
    else:
        assert lo <= got <= hi and str(got) == text.strip().lstrip("0").rjust(1, "0")
