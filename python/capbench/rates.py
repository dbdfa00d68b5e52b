"""Rates, links and frame lengths, as RFC 2544 and a wire count them.

A frame length includes the 4 B FCS (a "64 B frame" is 60 B in the buffer).
A rate in bits per second counts the 20 B of preamble, SFD and inter-frame gap
each frame occupies on a wire, so `pps = link_bps / ((frame_len + 20) * 8)`:
1 GbE carries 1,488,095 frames of 64 B per second.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from capbench import inputs
from capbench.errors import UsageError

WIRE_OVERHEAD_B = 20  # preamble (7) + SFD (1) + minimum inter-frame gap (12)
FRAME_MIN_B = 64
DEFAULT_MTU_B = 1500
ETH_OVERHEAD_B = 18  # 14 B Ethernet header + 4 B FCS: frame_len = MTU + 18

LINKS_BPS: dict[str, float] = {
    "1g": 1e9,
    "10g": 10e9,
    "25g": 25e9,
    "40g": 40e9,
    "100g": 100e9,
}

# The seed's 13 frame lengths (RFC 2544's seven plus six chosen at random).
SEED_SIZES: tuple[int, ...] = (64, 73, 128, 207, 256, 313, 512, 726, 1024, 1174, 1280, 1319, 1518)
RFC2544_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 1280, 1518)
NAMED_SIZES: dict[str, tuple[int, ...]] = {"seed": SEED_SIZES, "rfc2544": RFC2544_SIZES}

_SI = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}

# The largest values capbench takes, refused beyond at parse time so no later product (a
# duration in nanoseconds, a frame count) can overflow a 64-bit counter in the C programs:
# A day: any trial, pause or settle time; the C programs refuse longer ones too (CB_SECONDS_MAX
# in src/common/util.h: their pacer's departure times wrap after 78 h).
MAX_DURATION_S = 24 * 3600
MAX_DURATION_TEXT = f"{MAX_DURATION_S:,} s (a day)"
MAX_RATE_PPS = 1.5e9  # ten times 100 GbE at 64 B (148.8 Mpps)
MAX_RATE_BPS = 1e12  # ten times the fastest link (100g)
MAX_FRAMES = int(MAX_RATE_PPS * MAX_DURATION_S)  # no trial sends more: a bound for every frame count


def wire_pps(link_bps: float, frame_len: int) -> float:
    """Frames per second a link of `link_bps` carries at `frame_len` B (incl. FCS)."""
    return link_bps / ((frame_len + WIRE_OVERHEAD_B) * 8)


def wire_bps(pps: float, frame_len: int) -> float:
    """Bits per second on the wire that `pps` frames of `frame_len` B occupy."""
    return pps * (frame_len + WIRE_OVERHEAD_B) * 8


def parse_link(text: str) -> float:
    """`1g|10g|25g|40g|100g` (also `10gbe`, `10gbps`) -> bits per second."""
    key = text.strip().lower()
    for suffix in ("bps", "bit", "be"):
        key = key.removesuffix(suffix)
    if key not in LINKS_BPS:
        raise UsageError(f"unknown link {_cut(text)}: use one of {', '.join(LINKS_BPS)}")
    return LINKS_BPS[key]


def link_name(link_bps: float) -> str:
    """The name of a link speed, `1g` for 1e9."""
    for name, bps in LINKS_BPS.items():
        if bps == link_bps:
            return name
    return f"{link_bps / 1e9:g}g"


def _fmt_number(value: float) -> str:
    """A float as short text without losing precision: 1488095.2380952381 -> '1488095.238095238';
    never in exponent form (1e-05), which parse_rate does not read back."""
    return format(Decimal(repr(float(value))), "f").removesuffix(".0")


@dataclass(frozen=True)
class Rate:
    """An offered load: frames per second, wire bits per second, a share of the link, or `max`.

    `text` is the canonical form the generator accepts for `--rate`.
    """

    kind: str  # "pps" | "bps" | "pct" | "max"
    value: float  # pps, bits/s or percent; 0 for max
    text: str

    @classmethod
    def from_pps(cls, pps: float) -> Rate:
        if not pps > 0 or math.isinf(pps):
            raise UsageError(f"rate {pps!r} pps is not a positive number")
        return cls("pps", float(pps), _fmt_number(pps) + "pps")

    @property
    def is_max(self) -> bool:
        return self.kind == "max"

    def pps(self, frame_len: int, link_bps: float) -> float | None:
        """Frames per second at `frame_len` on `link_bps`; None for `max` (unpaced)."""
        if self.kind == "pps":
            return self.value
        if self.kind == "bps":
            return self.value / ((frame_len + WIRE_OVERHEAD_B) * 8)
        if self.kind == "pct":
            return wire_pps(link_bps, frame_len) * self.value / 100.0
        return None

    def check(self, frame_len: int, link_bps: float) -> None:
        """Raise UsageError when this rate exceeds the wire rate of the link at `frame_len`."""
        pps = self.pps(frame_len, link_bps)
        if pps is None:
            return
        limit = wire_pps(link_bps, frame_len)
        # A relative tolerance: "1g" on a 1g link or 1488095pps at 64 B are at, not above, wire rate.
        if pps > limit * (1 + 1e-9) + 0.5:
            raise UsageError(
                f"rate {self.text} is {pps:,.0f} pps, above the {link_name(link_bps)} wire rate of "
                f"{limit:,.0f} pps for {frame_len} B frames: lower --rate, or raise --link"
            )

    def __str__(self) -> str:
        return self.text


_RATE_RE = re.compile(r"^(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[a-z%]*)$")


def parse_rate(text: str) -> Rate:
    """Parse `1.2Mpps`, `800kpps`, `5000pps`, `1g`, `950m`, `10G`, `2.5gbps`, `50%` or `max`."""
    raw = text.strip()
    low = raw.lower()
    if low in ("max", "unpaced"):
        return Rate("max", 0.0, "max")
    m = _RATE_RE.match(low)
    hint = "use e.g. 1.2Mpps, 800kpps, 5000pps, 950m (bits/s on the wire), 1g, 50% (of --link) or max"
    if not m:
        raise UsageError(f"cannot read rate {_cut(text)}: {hint}")
    num = float(m.group("num"))
    unit = m.group("unit")
    if unit == "%":
        if not 0 < num <= 100:
            raise UsageError(f"rate {_cut(text)} must be above 0 % and at most 100 % of the link: {hint}")
        return Rate("pct", num, _fmt_number(num) + "%")
    if num <= 0:
        raise UsageError(f"rate {_cut(text)} must be above zero: {hint}")
    if unit.endswith("pps"):
        prefix = unit[:-3]
        if prefix not in _SI:
            raise UsageError(f"cannot read rate {_cut(text)}: {hint}")
        pps = num * _SI[prefix]
        if not pps <= MAX_RATE_PPS:
            raise UsageError(f"rate {_cut(text)} is above {MAX_RATE_PPS:,.0f} pps, the most capbench offers")
        return Rate("pps", pps, _fmt_number(pps) + "pps")
    for suffix in ("bps", "bit", "b"):
        if unit.endswith(suffix):
            unit = unit[: -len(suffix)]
            break
    if unit in ("k", "m", "g"):
        bps = num * _SI[unit]
        if not bps <= MAX_RATE_BPS:
            raise UsageError(f"rate {_cut(text)} is above {MAX_RATE_BPS / 1e9:g} Gbit/s, the most capbench offers")
        return Rate("bps", bps, _fmt_number(bps / 1e6) + "m" if bps < 1e9 else _fmt_number(bps / 1e9) + "g")
    raise UsageError(f"cannot read rate {_cut(text)}: {hint}")


def max_frame_len(mtu: int = DEFAULT_MTU_B) -> int:
    """The longest frame (incl. FCS) an interface of `mtu` carries."""
    return mtu + ETH_OVERHEAD_B


PROFILES = ("imix:seed", "imix:simple")
PROFILE_HELP = "imix:seed, imix:simple, random:MIN-MAX, dist:FILE.csv or trace:FILE.pcap"


def parse_profile(item: str) -> str | None:
    """A frame-length profile for one trial (capbench-gen --size), or None if `item` is none.

    Files become absolute paths (the generator runs elsewhere); the generator checks
    their contents and says what is wrong in one line.
    """
    low = item.lower()
    if low in PROFILES:
        return low
    if low.startswith("imix:"):
        raise UsageError(f"unknown IMIX {_cut(item)}: use imix:seed (57/7/16/20 % of 64/570/594/1518 B) "
                         f"or imix:simple (7:4:1 of 64/594/1518 B)")
    if low.startswith("random:"):
        m = re.fullmatch(r"random:(\d{1,9})-(\d{1,9})", low)  # more digits: no frame length
        if not m or int(m.group(1)) > int(m.group(2)):
            raise UsageError(f"cannot read {_cut(item)}: use random:MIN-MAX with MIN <= MAX, e.g. random:64-1518")
        return low
    for prefix in ("dist:", "trace:"):
        if low.startswith(prefix):
            what = "CSV of length,weight rows" if prefix == "dist:" else "pcap capture"
            path = Path(item[len(prefix):]).expanduser()
            # A regular file only: the generator reads it to its end (a FIFO would block it,
            # a device such as /dev/zero never end); and one the user who runs capbench may read
            # (the generator runs with capbench's privileges: it asks again, as this does).
            inputs.check_readable(path, what=f"{prefix} file (a {what})")
            return prefix + str(path.resolve())
    return None


# The most frame lengths (and profiles) one --sizes makes: every length of a 9000 B jumbo MTU
# (64..9018/1 is 8,955), and a typo such as 64..1518/0.1 is refused rather than run for days.
MAX_SIZES = 10_000
_RANGE_RE = re.compile(r"^(\d{1,9})\.\.(\d{1,9})(?:/(\d{1,9}))?$")


def parse_size_range(item: str, *, max_len: int = DEFAULT_MTU_B + ETH_OVERHEAD_B) -> tuple[int, ...] | None:
    """`MIN..MAX/STEP` (STEP 1 when left out): MIN, MIN+STEP, ... up to MAX, and MAX itself even
    where the steps do not land on it (64..1518/64 ends 1472, 1518); None if `item` is no range."""
    if ".." not in item:
        return None
    m = _RANGE_RE.match(item.lower().replace("b", ""))
    if not m:
        raise UsageError(f"cannot read frame length range {_cut(item)}: use MIN..MAX/STEP in bytes, e.g. 64..1518/64 "
                         f"(every length: 64..1518/1)")
    low, high, step = int(m.group(1)), int(m.group(2)), int(m.group(3) or 1)
    if low > high:
        raise UsageError(f"frame length range {_cut(item)}: MIN {low} is above MAX {high}")
    if step == 0:
        raise UsageError(f"frame length range {_cut(item)}: the step must be 1 B or more")
    check_frame_len(low, max_len=max_len)
    check_frame_len(high, max_len=max_len)
    values = tuple(range(low, high + 1, step))
    return values if values[-1] == high else (*values, high)


def parse_sizes(text: str, *, max_len: int = DEFAULT_MTU_B + ETH_OVERHEAD_B) -> tuple[int | str, ...]:
    """Parse `64,128`, `seed`, `rfc2544`, ranges (`64..1518/64`), profiles (`imix:seed`, ...) or a
    mix (`seed,1500,imix:seed`) into one item per trial: a frame length, or a profile's text;
    duplicates dropped."""
    sizes: dict[int | str, None] = {}  # in order, each once
    items = [t.strip() for t in text.split(",")]
    if not text.strip() or any(not t for t in items):
        raise UsageError(f"cannot read frame sizes {_cut(text)}: use e.g. 64,128,1518, 64..1518/64, seed, rfc2544 "
                         f"or {PROFILE_HELP}")
    for item in items:
        named = NAMED_SIZES.get(item.lower())
        profile = parse_profile(item)
        ranged = parse_size_range(item, max_len=max_len) if profile is None else None
        values: tuple[int, ...] = ()
        if profile is not None:
            sizes.setdefault(profile)
        elif named is not None:
            values = named
        elif ranged is not None:
            values = ranged
        else:
            try:
                values = (int(item.lower().removesuffix("b")),)
            except ValueError:
                raise UsageError(
                    f"cannot read frame size {_cut(item)}: use numbers in bytes (64,128,1518), a range "
                    f"(64..1518/64), {', '.join(NAMED_SIZES)}, or a profile: {PROFILE_HELP}"
                ) from None
        for size in values:
            check_frame_len(size, max_len=max_len)
            sizes.setdefault(size)
        if len(sizes) > MAX_SIZES:
            raise UsageError(f"frame sizes {_cut(text)} make more than {MAX_SIZES:,} lengths, the most capbench "
                             f"takes in one list: give a larger step")
    return tuple(sizes)


def check_frame_len(size: int, *, max_len: int = DEFAULT_MTU_B + ETH_OVERHEAD_B) -> None:
    """Raise UsageError unless FRAME_MIN_B <= size <= max_len (MTU + 18)."""
    if size < FRAME_MIN_B:
        raise UsageError(
            f"frame length {size} B is below the Ethernet minimum of {FRAME_MIN_B} B (incl. FCS): "
            f"use {FRAME_MIN_B} or more"
        )
    if size > max_len:
        raise UsageError(
            f"frame length {size} B is above {max_len} B, the interface MTU of {max_len - ETH_OVERHEAD_B} B "
            f"+ 18 B of Ethernet header and FCS: use sizes up to {max_len}"
        )


_DURATION_RE = re.compile(r"^(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>ms|s|m|min|h|)$")
_DURATION_UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_duration(text: str, *, what: str = "duration", allow_zero: bool = False) -> float:
    """`5`, `5s`, `250ms`, `2m` -> seconds (> 0, or >= 0 with allow_zero)."""
    m = _DURATION_RE.match(text.strip().lower())
    if not m:
        raise UsageError(f"cannot read {what} {_cut(text)}: use seconds (5, 2.5s) or 250ms, 2m")
    seconds = float(m.group("num")) * _DURATION_UNITS[m.group("unit")]
    if seconds < 0 or (seconds == 0 and not allow_zero):
        raise UsageError(f"{what} {_cut(text)} must be above zero")
    if not seconds <= MAX_DURATION_S:
        raise UsageError(f"{what} {_cut(text)} is longer than {MAX_DURATION_TEXT}, the most capbench takes")
    return seconds


def _cut(text: str) -> str:
    """A value as given, quoted, cut when long (a 5,000-digit number stays one readable line)."""
    return repr(text) if len(text) <= 40 else f"{text[:37]!r}... ({len(text):,} characters)"
