"""Fuzz: campaign files (`capbench run --campaign FILE`), as bytes, as text and as generated TOML of
the keys a campaign has. Each input ends in a checked Campaign or one UsageError line."""

import json
import math
from pathlib import Path

from capbench import rates
from capbench.campaign import matrix as campaign
from capbench.trial.sensors import sensor_backends
from capbench.declared import backend_names
from capbench.errors import UsageError
from fuzzing import NUMBERS, clean, scratch_dir
from hypothesis import example, given
from hypothesis import strategies as st

BACKENDS = backend_names()

CAMPAIGNS = sorted((Path(__file__).resolve().parents[2] / "campaigns").glob("*.toml"))
DIR = scratch_dir("capbench-fuzz-campaign-")


def load_file(data: bytes) -> "campaign.Campaign | UsageError":
    path = DIR / "c.toml"
    path.write_bytes(data)
    return clean(lambda: campaign.load(path, backends_known=BACKENDS))


def assert_checked(c) -> None:
    """What an accepted campaign holds: every value within its bounds."""
    if isinstance(c, UsageError):
        return
    durations = [d for m in c.matrices for d in m.durations]
    for s in (*durations, c.pause_s, c.group_gap_s, *([c.trial_s] if c.trial_s is not None else [])):
        assert math.isfinite(s) and 0 <= s <= rates.MAX_DURATION_S
    assert all(d > 0 for d in durations) and all(1 <= n <= rates.MAX_FRAMES for m in c.matrices for n in m.counts)
    assert 0 < c.precision_pct < 100 and 2 <= c.steps_per_sweep <= campaign.MAX_SWEEP_STEPS
    assert 0 <= c.loss_tolerance_frames <= rates.MAX_FRAMES and c.groups * c.group_size <= rates.MAX_FRAMES
    for m in c.matrices:
        # capbench-cap's backends, capture programs, or several sensors' ("pcap + raw")
        assert 1 <= m.repeat <= campaign.MAX_REPEAT and m.backends
        assert all(set(sensor_backends(b)) <= set(BACKENDS) | set(c.programs) for b in m.backends)
        assert all(1 <= p <= 64 for p in m.procs)
    steps = c.steps()
    assert steps and len(steps) <= campaign.MAX_STEPS
    for step in steps:
        assert c.trial_duration_s(step) <= rates.MAX_DURATION_S


@given(st.binary(max_size=400))
@example(b"\xff")
@example(b"\xef\xbb\xbf[campaign]\n")
@example(b"a = " + b"9" * 5000)  # tomllib: ValueError, an integer of 5,000 digits
@example(b"a = " + b"[" * 5000)
def test_fuzz_campaign_bytes(data):
    assert_checked(load_file(data))


@given(st.text(max_size=400))
def test_fuzz_campaign_text(text):
    assert_checked(clean(lambda: campaign.loads(text, Path("c.toml"), backends_known=BACKENDS)))


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(max(min(v, 2 ** 63 - 1), -(2 ** 63)))  # TOML's integers are 64-bit
    if isinstance(v, str):
        v = "".join(c for c in v if not 0xD800 <= ord(c) <= 0xDFFF)  # TOML holds no surrogates
        return json.dumps(v)  # a TOML basic string: JSON's escapes (\\uXXXX for control characters) are TOML's
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f'"{k}" = {toml_value(x)}' for k, x in v.items()) + "}"
    raise AssertionError(v)


# Values a campaign key may be given: the right kind, near its bounds, and every other kind.
WORDS = st.sampled_from(["iperf", "rfc2544", "mlr", "sweep", "back2back", "latency", "pcap", "afp-v3", "afxdp", "xdp",
                         "fanout", "A:A", "A:B", "auto", "touch", "none", "spin:500", "seed", "64", "1518",
                         "imix:seed", "random:64-1518", "dist:/dev/zero", "trace:/tmp", "1g", "100g", "max", "50%",
                         "1Mpps", "86400", "86401", "5", "250ms", "2m", "4M", "1G", "--workers 2", "-i eth0", ""])
VALUE = st.one_of(WORDS, NUMBERS.filter(lambda x: not isinstance(x, bool)), st.booleans(), st.text(max_size=12),
                  st.lists(st.one_of(WORDS, st.integers(-2, 2000)), max_size=3),
                  st.dictionaries(st.sampled_from(["pcap", "fanout", "nope"]), WORDS, max_size=2))
# For each key, values of the kind it takes (most of the time), else any VALUE.
RIGHT = {
    "name": st.text(max_size=10), "link": st.sampled_from(["1g", "10g", "100g"]),
    "rate": st.sampled_from(["100%", "50%", "1Mpps", "max", "1g", "0.5%", "1000pps"]),
    "max_rate": st.sampled_from(["50%", "500kpps", "max", "2Mpps", "10%"]),
    "duration": st.one_of(st.sampled_from(["5", "1", "0.1", "86400", "2m", "1,5", "1,,2"]),
                          st.lists(st.sampled_from(["1s", "10", 2, 0.5, "0"]), min_size=1, max_size=3)),
    "count": st.one_of(st.integers(-1, 10 ** 15), st.lists(st.integers(0, 10 ** 7), min_size=1, max_size=3),
                       st.sampled_from(["1000,2000", "1_000", "x"])), "trial": st.sampled_from(["1", "60", "10s"]),
    "pause": st.sampled_from(["0", "2"]), "precision": st.floats(0.01, 99), "loss_tolerance": st.integers(0, 100),
    "steps": st.integers(2, 50), "engine": st.sampled_from(["xdp", "afpacket"]), "proc_cpus": st.lists(
        st.integers(0, 3), min_size=1, max_size=3), "groups": st.integers(0, 10), "group_size": st.integers(0, 10),
    "group_gap": st.sampled_from(["0", "0.1"]),
    "methods": st.lists(st.sampled_from(["iperf", "rfc2544", "mlr", "sweep", "back2back"]), min_size=1, max_size=2,
                        unique=True),
    "backends": st.lists(st.sampled_from(BACKENDS), min_size=1, max_size=3, unique=True),
    "sizes": st.one_of(st.sampled_from(["seed", "64", "64,1518", "imix:seed", "64..1518/1", "64..1518/64", "64..63",
                                        "64..1518/0", "1..99", "64..9999/1", "64..", "seed,64..128/8"]),
                       st.lists(st.integers(60, 1600), min_size=1, max_size=3, unique=True)),
    "pin": st.lists(st.sampled_from(["A:A", "A:B", "auto"]), min_size=1, max_size=2, unique=True),
    "app_load": st.lists(st.sampled_from(["touch", "none", "spin:500", "zlib:3"]), min_size=1, max_size=2, unique=True),
    "procs": st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True),
    "ring": st.lists(st.sampled_from(["4M", "64k", "1G"]), min_size=1, max_size=2, unique=True),
    "rx_ring": st.lists(st.sampled_from([256, 1024, 16384]), min_size=1, max_size=2, unique=True),
    "vary": st.dictionaries(st.sampled_from(["ring", "pin", "afp-v3:block-size", "fanout:workers", "nosuch:x",
                                             "tcpdump:buffer"]),
                            st.lists(st.sampled_from(["1M", "4", "A:B", "-x", "0"]), min_size=1, max_size=2,
                                     unique=True), max_size=2),
    "repeat": st.integers(1, 3), "backend_args": st.just({"fanout": "--workers 2"}),
    "apps": st.dictionaries(st.sampled_from(["mydump", "tcpdump", "pcap"]),
                            st.sampled_from(["tcpdump -i {iface} -w {out}", "tcpdump -w {out}", "nosuchdump -i {iface}",
                                             "{bogus} -i {iface}", ""]), max_size=2),
    "sensors": st.lists(st.sampled_from([*BACKENDS, "tcpdump", "nope"]), min_size=1, max_size=3, unique=True),
    "tap_cpu": st.integers(-1, 3),
    "profile": st.booleans(), "profile_hz": st.integers(0, 30000),
    "apps_files": st.lists(st.sampled_from(["/dev/zero", "/nonexistent.toml", "/tmp"]), min_size=1, max_size=2),
}


def table(keys):
    return st.lists(st.sampled_from(sorted(keys)), max_size=6, unique=True).flatmap(
        lambda ks: st.fixed_dictionaries({k: st.one_of(RIGHT[k], RIGHT[k], VALUE) for k in ks}))


TABLE = table(campaign.KEYS)
MATRIX = table(campaign.MATRIX_KEYS)


@given(TABLE, st.lists(MATRIX, max_size=2))
@example({"loss_tolerance": 10 ** 30}, [])
@example({"groups": 1_000_000, "group_size": 100_000_000, "rate": "1000pps", "sizes": "64"}, [])
@example({"duration": "604801"}, [])
@example({"sizes": "64..1518/1", "duration": ["1", "2"], "pin": ["A:A", "A:B", "auto"], "procs": [1, 2],
          "ring": ["4M", "64k"], "repeat": 3, "backends": ["pcap", "afp-v3"]}, [])  # 104,760 steps: refused
@example({"count": 10 ** 14, "rate": "1000pps"}, [])
@example({"precision": math.nan}, [])
def test_fuzz_campaign_keys(top, matrices):
    text = "[campaign]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in top.items())
    text += "".join("[[matrix]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in m.items()) for m in matrices)
    assert_checked(load_file(text.encode()))


def test_the_stored_campaigns_are_accepted():
    for path in CAMPAIGNS:
        assert not isinstance(load_file(path.read_bytes()), UsageError), path
