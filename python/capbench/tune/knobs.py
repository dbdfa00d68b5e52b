"""Knobs: the settings `capbench tune` searches and `capbench run --vary` varies (issue 30).

A knob is one setting that changes how a capture stack loses: capbench's own run settings
(`--ring`, the capture buffer; `--rx-ring`, the test bed's receive ring) and, declared by each
backend in its C option table, the options that set the same things in more detail. A knob is
set in one place only: `--ring` and a backend option that sets the same buffer are one knob.

A configuration is a mapping knob name -> value text (the value as the user would write it);
`apply` turns it into the Matrix whose trials run it, `run_args` into a ready `capbench run`
line, `label` into the words a table and a figure show.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from capbench import declared
from capbench.campaign.matrix import MAX_RING, Matrix, parse_ring
from capbench.errors import UsageError
from capbench.testbed import rxmode

Config = Mapping[str, str]  # knob name -> value, as the user writes it ("4M", "1024")


@dataclass(frozen=True)
class Knob:
    """One setting a search may change."""

    name: str  # as --knobs and --vary name it: "ring", "rx-ring", "afp-v3:block-size"
    flag: str  # the option that sets it: capbench run's "--ring", or the backend's "--block-size"
    scope: str  # "run": a capbench run setting (a Matrix field); "backend": one backend's option
    candidates: tuple[str, ...]  # the values a search tries, ascending
    default: str  # what runs when it is not set ("" : the backend's or test bed's own)
    governs: tuple[str, ...] = ()  # the account layers ("rx ring", "socket") whose loss it changes
    backend: str | None = None  # scope "backend": whose option it is


def _by_fours(lo: int, hi: int) -> tuple[int, ...]:
    """lo, 4 lo, 16 lo, ... up to hi: a search's first candidates, a factor of four apart."""
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 4
    return tuple(out)


def _bytes_text(n: int) -> str:
    for shift, unit in ((30, "G"), (20, "M"), (10, "k")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


# The capture buffer's candidates: 256 KiB (below every backend's default) to 64 MiB (well below
# MAX_RING: a ring of GiBs is filled page by page before each trial and only hides loss longer).
RING_CANDIDATES = tuple(_bytes_text(n) for n in _by_fours(256 << 10, min(64 << 20, MAX_RING)))
# The receive ring's candidates: the veth's own depth up to cpumap's limit (256, 1024, 4096, 16384).
RX_RING_CANDIDATES = tuple(str(n) for n in _by_fours(rxmode.VETH_RING_FRAMES, rxmode.RX_RING_MAX))


def _run_knobs(backend: str) -> tuple[Knob, ...]:
    spec = declared.backend(backend).ring if backend in declared.backend_names() else None
    knobs = [Knob("rx-ring", "--rx-ring", "run", RX_RING_CANDIDATES, str(rxmode.DEFAULT_RX_RING), ("rx ring",))]
    if spec is not None:
        knobs.insert(0, Knob("ring", "--ring", "run", RING_CANDIDATES, "", ("socket",)))
    return tuple(knobs)


def space(backend: str, names: Sequence[str] | None = None) -> tuple[Knob, ...]:
    """The knobs of `backend` on the test bed: all of them, or those `names` names (an unknown
    name is one line naming the knobs there are)."""
    knobs = _run_knobs(backend)
    if names is None:
        return knobs
    by_name = {k.name: k for k in knobs}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"{backend} has no knob {unknown[0]!r}: its knobs are {', '.join(by_name)} "
                         f"(capbench tune --help)")
    return tuple(by_name[n] for n in names)


def check(knob: Knob, value: str) -> str:
    """`value` if `knob` takes it, else one line saying its range."""
    if knob.name == "ring":
        parse_ring(value)
    elif knob.name == "rx-ring":
        rxmode.parse_rx_ring(value)
    return value


def apply(matrix: Matrix, config: Config, knobs: Sequence[Knob]) -> Matrix:
    """`matrix` (of one backend) with every knob of `config` set: the Matrix its trials run."""
    by_name = {k.name: k for k in knobs}
    changes: dict = {}
    for name, value in config.items():
        check(by_name[name], value)
        if name == "ring":
            changes["rings"] = (parse_ring(value),)
        elif name == "rx-ring":
            changes["rx_rings"] = (rxmode.parse_rx_ring(value),)
    return dataclasses.replace(matrix, **changes)


def label(config: Config) -> str:
    """"ring=4M rx-ring=1024", in the order the knobs were given; "defaults" when none is set."""
    return " ".join(f"{k}={v}" for k, v in config.items()) or "defaults"


def run_args(config: Config, knobs: Sequence[Knob]) -> list[str]:
    """The `capbench run` arguments that set `config` (the best configuration as a ready line)."""
    by_name = {k.name: k for k in knobs}
    out: list[str] = []
    for name, value in config.items():
        k = by_name[name]
        if k.scope == "run":
            out += [k.flag, value]
        else:
            out += ["--backend-args", f"{k.backend}={k.flag} {value}"]
    return out
