import pytest
from capbench.errors import UsageError
from capbench.rates import (
    RFC2544_SIZES,
    SEED_SIZES,
    Rate,
    parse_duration,
    parse_link,
    parse_rate,
    parse_sizes,
    wire_bps,
    wire_pps,
)

# The seed's Table 1 ("1.0 Gbps" rows) at 1 GbE. The seed prints 550066 for 207 B, a
# transposition of 550661 = 1e9 / ((207 + 20) * 8); its Table 2 has 550691.
SEED_TABLE_1_PPS = {
    64: 1488095, 73: 1344086, 128: 844595, 207: 550661, 256: 452899, 313: 375375,
    512: 234962, 726: 167560, 1024: 119732, 1174: 104690, 1280: 96154, 1319: 93353, 1518: 81274,
}


@pytest.mark.parametrize("frame_len", SEED_SIZES)
def test_wire_pps_matches_seed_table_1(frame_len):
    assert abs(wire_pps(1e9, frame_len) - SEED_TABLE_1_PPS[frame_len]) <= 1


def test_wire_bps_inverts_wire_pps():
    for size in SEED_SIZES:
        assert wire_bps(wire_pps(10e9, size), size) == pytest.approx(10e9)


def test_named_size_lists():
    assert parse_sizes("seed") == SEED_SIZES
    assert len(SEED_SIZES) == 13
    assert parse_sizes("rfc2544") == RFC2544_SIZES == (64, 128, 256, 512, 1024, 1280, 1518)
    assert parse_sizes("64,128") == (64, 128)
    assert parse_sizes(" 1518 , 64 ") == (1518, 64)
    assert parse_sizes("rfc2544,73,64") == RFC2544_SIZES + (73,)


@pytest.mark.parametrize("text", ["", "63", "1519", "64,,128", "abc", "64;128", "-64", "seeds", "imix:huge",
                                  "random:1518-64", "random:64", "dist:/nonexistent.csv", "trace:/nonexistent.pcap"])
def test_bad_sizes(text):
    with pytest.raises(UsageError):
        parse_sizes(text)


def test_profiles_are_one_trial_each(tmp_path, monkeypatch):
    dist = tmp_path / "mix.csv"
    dist.write_text("64,1\n")
    monkeypatch.chdir(tmp_path)
    assert parse_sizes("64,IMIX:seed,random:64-1518,imix:simple,imix:seed") == (
        64, "imix:seed", "random:64-1518", "imix:simple")
    # A file becomes an absolute path: the generator runs in another namespace and directory.
    assert parse_sizes("dist:mix.csv") == (f"dist:{dist}",)


def test_size_limit_follows_mtu():
    assert parse_sizes("9018", max_len=9018) == (9018,)
    with pytest.raises(UsageError, match="MTU"):
        parse_sizes("1519")


@pytest.mark.parametrize(
    "text, kind, pps64",
    [
        ("1.2Mpps", "pps", 1.2e6),
        ("800kpps", "pps", 800e3),
        ("5000pps", "pps", 5000),
        ("1g", "bps", 1e9 / 672),
        ("950m", "bps", 950e6 / 672),
        ("10G", "bps", 10e9 / 672),
        ("2.5gbps", "bps", 2.5e9 / 672),
        ("100%", "pct", 1e9 / 672),
        ("50%", "pct", 0.5e9 / 672),
    ],
)
def test_parse_rate(text, kind, pps64):
    rate = parse_rate(text)
    assert rate.kind == kind
    assert rate.pps(64, 1e9) == pytest.approx(pps64)


def test_parse_rate_canonical_text_round_trips():
    for text in ["1.2Mpps", "800kpps", "1g", "950m", "10G", "100%", "12.5%", "max"]:
        rate = parse_rate(text)
        again = parse_rate(rate.text)
        assert again.kind == rate.kind and again.value == pytest.approx(rate.value)


def test_max_is_unpaced():
    rate = parse_rate("max")
    assert rate.is_max and rate.pps(64, 1e9) is None
    rate.check(64, 1e9)  # never above wire rate


@pytest.mark.parametrize("text", ["", "fast", "1.2Mbps/s", "0pps", "0%", "101%", "-5%", "5xpps", "1t", "1.2.3g"])
def test_bad_rates(text):
    with pytest.raises(UsageError):
        parse_rate(text)


def test_rate_above_wire_rate_is_refused():
    parse_rate("100%").check(64, 1e9)
    parse_rate("1g").check(64, 1e9)
    parse_rate("1488095pps").check(64, 1e9)
    with pytest.raises(UsageError, match="wire rate"):
        parse_rate("1488097pps").check(64, 1e9)
    with pytest.raises(UsageError, match="wire rate"):
        parse_rate("1.1g").check(1518, 1e9)
    with pytest.raises(UsageError):
        parse_rate("100kpps").check(1518, 1e9)  # 1 GbE carries 81,274 pps of 1518 B
    parse_rate("100kpps").check(1518, 10e9)


def test_rate_from_pps_keeps_precision():
    rate = Rate.from_pps(wire_pps(1e9, 64))
    assert parse_rate(rate.text).value == wire_pps(1e9, 64)
    with pytest.raises(UsageError):
        Rate.from_pps(0)


@pytest.mark.parametrize("text, bps", [("1g", 1e9), ("10G", 10e9), ("25g", 25e9), ("40g", 40e9),
                                       ("100g", 100e9), ("10GbE", 10e9), ("1gbps", 1e9)])
def test_parse_link(text, bps):
    assert parse_link(text) == bps


@pytest.mark.parametrize("text", ["2g", "1", "fast", ""])
def test_bad_links(text):
    with pytest.raises(UsageError):
        parse_link(text)


def test_parse_duration():
    assert parse_duration("5") == 5
    assert parse_duration("2.5s") == 2.5
    assert parse_duration("250ms") == 0.25
    assert parse_duration("2m") == 120
    assert parse_duration("0", allow_zero=True) == 0
    for bad in ["0", "-1", "five", "5 parsecs", ""]:
        with pytest.raises(UsageError):
            parse_duration(bad)
