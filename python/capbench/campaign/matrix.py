"""Campaigns: a whole experiment as a list of steps, written trial by trial, resumable.

A campaign is a matrix (or several) of settings: methods x placements x
application loads x capture processes x backends x frame lengths x repetitions.
`capbench run` with flags is a campaign of one matrix; `capbench run --campaign
FILE.toml` reads one (docs/campaigns.md lists every key, its type, default and an example):

    [campaign]                    # shared, and the defaults of every matrix
    name = "buffers"
    methods = ["iperf"]
    sizes = "64..1518/512"        # 64, 576, 1088, 1518
    duration = ["1s", "5s"]       # run lengths: an axis like the others
    proc_cpus = [1, 0]            # with procs > 1: process i on the i-th CPU, cycled

    [campaign.backend_args]       # a backend's own capbench-cap options
    fanout = "--workers 2 --fanout-mode lb"

    [[matrix]]                    # optional: each matrix overrides the defaults
    backends = ["pcap", "afp-v3"]
    ring = ["256k", "4M"]

    [[matrix]]
    backends = ["fanout"]

A key left out has the default of `capbench run`'s flag of that name (`sizes`: the seed's 13
lengths; `capbench run --help` lists them): both come from the fields of Matrix and Campaign.

Every step has a key (its settings as text). Each trial record carries the key
of its step (`step`) and its repetition; each method answer (searches.jsonl)
carries it too. `--resume DIR` reads what DIR holds, skips the steps that are
complete, and replays the recorded trials of a step that was cut short into its
method (a `ReplayMeasurer`): the searches are deterministic functions of their
trial results, so the search continues where it stopped, and a crash or Ctrl-C
loses at most the trial in flight.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import os
import re
import shlex
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capbench import declared, inputs
from capbench.options import option_value
from capbench.profile.perf_record import DEFAULT_HZ, HZ_RANGE
from capbench.errors import UsageError
from capbench.methods import registry
from capbench.methods.registry import METHODS
from capbench.methods.method import DEFAULT_PAUSE_S, DEFAULT_PRECISION_PCT, DEFAULT_STEPS
from capbench.trial import apps
from capbench.trial.apps import Adapter
from capbench.trial.measure import TrialSetup
from capbench.trial.sensors import sensor_backends, step_backend
from capbench.testbed import host_sysctl, nic, rxmode
from capbench.rates import (MAX_DURATION_S, MAX_DURATION_TEXT, MAX_FRAMES, NAMED_SIZES, SEED_SIZES, Rate, link_name, wire_pps,
                            max_frame_len, parse_duration, parse_link, parse_rate, parse_sizes)

PINS = ("A:A", "A:B", "auto")
CUSTOM_PIN = "cpus"  # the placement given CPU by CPU (--gen-cpu, --rx-cpu, --cap-cpu)
MAX_SENSORS = 64  # the tap's devmap (CB_TAP_MAX_TARGETS)
MAX_REPEAT = 1000  # repetitions of a step: far beyond any noise estimate, and the step list stays small
MAX_SWEEP_STEPS = 10_000  # a sweep's offered rates: 0.01 % of the wire rate apart
MAX_STEPS = 100_000  # a campaign's steps: every length of 64..1518/1 at 4 settings x 17 run lengths
JUMBO_MTU_B = 9000  # the longest frames a profile's mix may hold, for a count's time bound
# Options capbench sets itself in every trial: not for --backend-args.
OWN_CAP_OPTIONS = ("--iface", "-i", "--backend", "-b", "--cpu", "--app-load", "--count", "-c", "--duration", "-d",
                   "--interval", "--procs", "--proc-cpus")


@dataclass(frozen=True)
class Step:
    """One method at one setting: an iperf trial, or a search / sweep, once per repetition."""

    method: str
    backend: str
    size: int | str
    pin: str
    app_load: str | None
    procs: int
    repeat: int  # 1-based
    ring: int = 0  # kernel buffer bytes (declared.Backend.ring_args); 0 = the backend's default
    backend_args: str = ""  # the backend's own capbench-cap options (--backend-args), as given
    groups: str = ""  # "N x SIZE + GAP s" when the campaign sends groups (Campaign.groups)
    # The run length of an iperf trial: `duration_s` seconds, or exactly `count` frames (0: by
    # duration). The searches choose their own trial lengths: 0.0 and 0 for them.
    duration_s: float = 0.0
    count: int = 0
    dur: str = ""  # duration_s as the key names it ("10s"), only in a campaign of several durations
    rx_ring: int = 0  # the cpumap model's receive ring in frames (rxmode); 0 = rxmode.DEFAULT_RX_RING
    # net.core.netdev_max_backlog held at exactly this for the step (the backlog knob, host_sysctl);
    # 0 = the host's own.
    backlog: int = 0
    # The knobs this step sets (--vary, capbench tune): (knob, value as given), in the order given.
    # A run knob's value is in its field above too; a backend knob's option is in knob_args.
    knobs: tuple[tuple[str, str], ...] = ()

    @property
    def config(self) -> str:
        """The knobs as tables and keys name them: "afp-v3:block-size=1M ring=4M" ("" for none)."""
        return config_text(self.knobs)

    @property
    def knob_args(self) -> tuple[str, ...]:
        """The capbench-cap options of this step's backend knobs (after its --backend-args)."""
        return tuple(a for name, value in self.knobs for a in knob_option_args(name, value, self.backend))

    @property
    def key(self) -> str:
        """`iperf|pcap|64|pin=A:A|load=touch|procs=1|ring=4194304|rep=2`: every setting of the step
        (STEP_KEY_PARTS), then its repetition; the trials and answers of the step carry it."""
        parts = [self.method, self.backend, str(self.size)]
        for name, field_, always in STEP_KEY_PARTS:
            v = getattr(self, field_)
            if field_ == "app_load":
                v = v or "touch"
            if always or v:
                parts.append(f"{name}={v}")
        return "|".join(parts) + f"|rep={self.repeat}"


# The settings of a Step in its key after method, backend and size: (name in the key, Step field,
# always shown). A setting added later is left out at its default (0 or ""), so the keys of runs
# recorded before it existed still name their steps (--resume). One line per setting; the
# report reads pin= and groups= back (report.keys).
STEP_KEY_PARTS = (("pin", "pin", True), ("load", "app_load", True), ("procs", "procs", True),
                  ("ring", "ring", False), ("rx_ring", "rx_ring", False), ("backlog", "backlog", False),
                  ("args", "backend_args", False), ("groups", "groups", False),
                  ("dur", "dur", False), ("count", "count", False), ("knobs", "config", False))


def _key(default: Any, key: str) -> Any:
    """A field set by the [campaign] (or [[matrix]]) key `key`, and by `capbench run`'s flag of
    that name: its default is the one both take when it is not given."""
    return dataclasses.field(default=default, metadata={"key": key})


# Every default of a campaign is declared once, in the fields of Matrix and Campaign below:
# a campaign file that leaves a key out and `capbench run` without its flag both run it, and
# `capbench run --help` shows it (default_text).
@dataclass(frozen=True)
class Matrix:
    methods: tuple[str, ...] = _key(("iperf",), "methods")
    backends: tuple[str, ...] = _key(("pcap", "afp-v3"), "backends")
    sizes: tuple[int | str, ...] = _key(SEED_SIZES, "sizes")  # the seed's 13 lengths
    pins: tuple[str, ...] = _key(("A:A",), "pin")
    app_loads: tuple[str | None, ...] = _key((None,), "app_load")  # None: the counter's default, touch
    procs: tuple[int, ...] = _key((1,), "procs")
    rings: tuple[int, ...] = _key((0,), "ring")  # 0: each backend's own buffer
    # The receive ring's depth in frames, with --rx-mode cpumap (seed 002: the descriptor ring);
    # 0: rxmode.DEFAULT_RX_RING.
    rx_rings: tuple[int, ...] = _key((0,), "rx_ring")
    repeat: int = _key(1, "repeat")
    backend_args: tuple[tuple[str, str], ...] = _key((), "backend_args")  # (backend, its options), sorted
    # The run length of an iperf trial, an axis like the others (seed 001: large buffers hide loss
    # only in short runs): each duration's sending time, or with counts each count's frames.
    durations: tuple[float, ...] = _key((5.0,), "duration")
    counts: tuple[int, ...] = _key((), "count")  # (): by duration
    # Knobs as axes (--vary KNOB=V1,V2, capbench tune): (knob, its values), each knob once. A run
    # knob (RUN_KNOBS) sets its Step field, a backend knob ("afp-v3:block-size") its backend's option;
    # each backend's steps take every combination of the knobs it has (tune.knobs.space says which).
    vary: tuple[tuple[str, tuple[str, ...]], ...] = _key((), "vary")

    @property
    def lengths(self) -> tuple[tuple[float, int], ...]:
        """The run lengths of its iperf trials: (duration_s, 0) each, or (0.0, count) each."""
        return tuple((0.0, n) for n in self.counts) or tuple((d, 0) for d in self.durations)

    @property
    def size(self) -> int:
        """How many steps it makes (before two matrices' shared steps are merged): a search's
        steps do not vary with the run length."""
        per_length = sum(1 if registry.get(m).sets_own_load else len(self.lengths) for m in self.methods)
        configs = sum(len(self.configs(b)) for b in self.backends)
        return per_length * math.prod(len(x) for x in (self.pins, self.app_loads, self.procs, self.rings,
                                                       self.rx_rings, self.sizes)) * configs * self.repeat

    def configs(self, backend: str) -> list[tuple[tuple[str, str], ...]]:
        """Every combination of the varied knobs `backend` has (one empty one when none)."""
        axes = [[(name, v) for v in values] for name, values in self.vary if knob_applies(name, backend)]
        return list(itertools.product(*axes))

    def steps(self) -> list[Step]:
        args = dict(self.backend_args)
        own_load = {m: registry.get(m).sets_own_load for m in self.methods}
        return [with_knobs(Step(m, b, s, p, a, n, r, ring, args.get(b, ""), rx_ring=rx_ring,
                                **({} if own_load[m] else {"duration_s": d, "count": count})), config)
                for m, p, a, n, ring, rx_ring, (d, count), b, s, r in itertools.product(
                    self.methods, self.pins, self.app_loads, self.procs, self.rings, self.rx_rings, self.lengths,
                    self.backends, self.sizes, range(1, self.repeat + 1))
                for config in self.configs(b)]


@dataclass(frozen=True)
class Campaign:
    name: str = _key("campaign", "name")  # a file's: its stem
    link_bps: float = _key(TrialSetup.link_bps, "link")  # a trial's own default
    rate: str = _key("100%", "rate")  # of the iperf method
    trial_s: float | None = _key(None, "trial")  # None: each method's own (Method.trial_s)
    precision_pct: float = _key(DEFAULT_PRECISION_PCT, "precision")
    # The searches' maximum load (MLRsearch's Max Load), a rate as --rate takes it; None: the wire rate.
    max_rate: str | None = _key(None, "max_rate")
    loss_tolerance_frames: int = _key(0, "loss_tolerance")
    steps_per_sweep: int = _key(DEFAULT_STEPS, "steps")
    pause_s: float = _key(DEFAULT_PAUSE_S, "pause")
    engine: str = _key(TrialSetup.engine, "engine")
    matrices: tuple[Matrix, ...] = (Matrix(),)
    # For the pin CUSTOM_PIN: (generator, kernel receive work, counter) CPUs as given.
    custom_cpus: tuple[int | None, int | None, int | None] | None = None
    proc_cpus: tuple[int, ...] | None = _key(None, "proc_cpus")  # with procs > 1: process i on proc_cpus[i % len]
    # Seed 004's groups: each iperf trial sends `groups` groups of `group_size` frames,
    # `group_gap_s` apart, and the counter reports every group (0: one stream, no groups).
    groups: int = _key(0, "groups")
    group_size: int = _key(0, "group_size")
    group_gap_s: float = _key(0.0, "group_gap")
    # Capture programs under test (trial/apps.py): (name, command template) of each --app, and
    # the user's adapter files (--apps-file); their names, and the built-in adapters', are backends.
    apps: tuple[tuple[str, str], ...] = _key((), "apps")
    apps_files: tuple[str, ...] = _key((), "apps_files")
    # Several sensors on one stream (seed 004, trial/sensors.py): the backend or capture program of
    # each, in order; every step then measures all of them at once. The tap's receive work runs on
    # tap_cpu (None: in the generator's softirq, on its CPU).
    sensors: tuple[str, ...] = _key((), "sensors")
    tap_cpu: int | None = _key(None, "tap_cpu")
    # Per-trial CPU profiles (capbench.profile): perf samples every CPU profile_hz times a second
    # over each trial's load window; the records get the profile of each role, profiles/ the stacks.
    profile: bool = _key(False, "profile")
    profile_hz: int = _key(DEFAULT_HZ, "profile_hz")

    @functools.cached_property
    def programs(self) -> dict[str, Adapter]:
        """The capture programs this campaign may name as backends: the built-in adapters, those of
        its adapter files and its --app specs (trial.apps.registry, read again from the fields)."""
        return program_registry(self.apps_files, self.apps)

    def program(self, backend: str) -> Adapter | None:
        """The adapter of a backend that is a capture program; None for capbench-cap's backends."""
        return None if backend in declared.backend_names() else self.programs.get(backend)

    def polls(self, backend: str) -> bool:
        """Whether a step's counter polls, keeping its CPU busy whatever the traffic (a backend's
        declared capability, an adapter's `polls`); a step of several sensors, when one does."""
        def one(name: str) -> bool:
            program = self.program(name)
            return program.polls if program is not None else declared.backend(name).polls
        return any(one(name) for name in sensor_backends(backend))

    @functools.cached_property
    def load(self) -> Rate:
        """The iperf method's load, `rate` parsed once (it was checked when the campaign was built)."""
        return parse_rate(self.rate)

    @functools.cached_property
    def max_load(self) -> Rate | None:
        """The searches' maximum load, `max_rate` parsed once; None: the wire rate."""
        return None if self.max_rate is None else parse_rate(self.max_rate)

    def group_args(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(capbench-gen options, capbench-cap options) of the groups, or two empty tuples."""
        if not self.groups:
            return (), ()
        return (("--groups", str(self.groups), "--group-size", str(self.group_size), "--group-gap",
                 f"{self.group_gap_s:g}"), ("--group-size", str(self.group_size), "--groups", str(self.groups)))

    def trial_duration_s(self, step: Step) -> float:
        """An iperf trial's --duration: the step's, or with groups at least the time they take at
        the campaign's rate (the generator stops after the last group); with a count, the time
        its frames take at the rate and more (the generator stops at the count)."""
        if step.count:
            return min(MAX_DURATION_S, 1.05 * step.count / self.count_pps(step.size) + 1.0)
        if not self.groups or not isinstance(step.size, int):
            return step.duration_s
        pps = self.load.pps(step.size, self.link_bps)
        needed = self.groups * self.group_size / pps + (self.groups - 1) * self.group_gap_s
        return max(step.duration_s, 1.05 * needed + 1.0)

    def count_pps(self, size: int | str) -> float:
        """The slowest a count's frames go out at the rate: at a mix of lengths, as if all were the
        longest an interface carries (a paced rate: check() refuses max with a count)."""
        return self.load.pps(size if isinstance(size, int) else max_frame_len(JUMBO_MTU_B), self.link_bps) or 1.0
    given: tuple[str, ...] = ()  # the [campaign] keys (or flags) that were set, for the checks

    def steps(self) -> list[Step]:
        """Every step of every matrix, in order, each once (a step two matrices share runs once)."""
        seen: dict[str, Step] = {}
        groups = f"{self.groups}x{self.group_size}+{self.group_gap_s:g}s" if self.groups else ""
        # The duration is in the key only where the campaign has several: the keys of a run of one
        # (and of the runs before it was an axis) stay as they were, and --resume finds them.
        durations = {d for m in self.matrices if not m.counts for d in m.durations}
        for m in self.matrices:
            for step in m.steps():
                step = dataclasses.replace(step, groups=groups, dur=(f"{step.duration_s:g}s" if len(durations) > 1
                                                                     and step.duration_s else ""))
                seen.setdefault(step.key, step)
        return list(seen.values())


def _keyed(cls: type) -> dict[str, dataclasses.Field]:
    """{[campaign] key: the field it sets} of Matrix or Campaign."""
    return {f.metadata["key"]: f for f in dataclasses.fields(cls) if "key" in f.metadata}


MATRIX_KEYS = set(_keyed(Matrix))
KEYS = MATRIX_KEYS | set(_keyed(Campaign))


def default_of(key: str) -> Any:
    """The default of a [campaign] key (Matrix's or Campaign's field)."""
    return (_keyed(Matrix) | _keyed(Campaign))[key].default


def default_text(key: str) -> str:
    """The default of a [campaign] key as a user writes it (the help texts of `capbench run`)."""
    value = default_of(key)
    if key == "sizes":
        return next((name for name, sizes in NAMED_SIZES.items() if sizes == value), ",".join(map(str, value)))
    if key == "link":
        return link_name(value)
    if key == "app_load":
        return ",".join(a or "touch" for a in value)
    if isinstance(value, tuple):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) or "none"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"  # as TOML writes it
    return f"{value:g}" if isinstance(value, float) else str(value)


def _tuple(value: Any, what: str) -> tuple:
    if isinstance(value, (list, tuple)):
        if not value:
            raise UsageError(f"{what} is empty: give at least one value")
        return tuple(value)
    return (value,)


def check_app_load(load: str) -> str:
    """`load` if capbench-cap --app-load takes it (its grammar: the declared app loads)."""
    return declared.check_app_load(load)


# The largest --ring: a socket buffer (SO_RCVBUF) is an int, so pcap and raw take
# less than 2 GiB, and a ring of GiBs is filled page by page before the trial.
MAX_RING = 1 << 30
_BYTES_RE = re.compile(r"^(\d+)([kmg]?)i?b?$")


def parse_ring(text: str) -> int:
    """A kernel buffer size: 4096, 64k, 4M, 1G (binary multiples), at least 4 KiB."""
    m = _BYTES_RE.match(text.strip().lower())
    if not m:
        raise UsageError(f"cannot read ring size {text!r}: give bytes such as 256k, 4M or 64M")
    value = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2)]
    if not 4096 <= value <= MAX_RING:
        raise UsageError(f"ring size {text}: give 4k to 1G")
    return value


def check_pin(pin: str) -> str:
    if pin == CUSTOM_PIN:
        return pin
    up = pin.upper() if pin.lower() != "auto" else "auto"
    if up not in PINS:
        raise UsageError(f"unknown placement {pin!r}: use A:A (kernel receive work and counter on one CPU), "
                         f"A:B (on two) or auto (the scheduler decides)")
    return up


# --- knobs: settings a run varies (--vary) and capbench tune searches ---------------------------
#
# A knob is a run setting (below: the Step field it sets, how its value reads, the Matrix axis
# that sets it otherwise), a setting of a port's NIC (testbed.nic.NIC_KNOBS: "nic-ring"; only in
# the step's knobs, set on the port by testbed.ports.StepSettings) or a backend's option that its C
# table marks tunable ("afp-v3:block-size": declared.Option.candidates). tune/knobs.py declares each knob's candidates and what it governs;
# here is what a knob's value does to a step, once. The poll thread's scheduling (--napi-sched) is
# no knob here: it is the test bed's, built once per run (runner), so it cannot vary by step. The
# backlog is a host setting the runner holds for each step that sets it (no Matrix axis: a run's
# --backlog is its test bed's, at least N for the whole run).
RUN_KNOBS: dict[str, tuple[str, Callable[[str], Any], str | None]] = {
    "ring": ("ring", parse_ring, "rings"),
    "rx-ring": ("rx_ring", rxmode.parse_rx_ring, "rx_rings"),
    "pin": ("pin", check_pin, "pins"),
    "backlog": ("backlog", host_sysctl.parse_backlog, None),
}
KNOB_SEP = ":"  # "afp-v3:block-size": a backend's knob


def config_text(knobs: Iterable[tuple[str, str]]) -> str:
    """A configuration as keys, tables and figures name it: "afp-v3:block-size=1M ring=4M"."""
    return " ".join(f"{k}={v}" for k, v in knobs)


def split_knob(name: str) -> tuple[str, str] | None:
    """(backend, "--option") of a backend knob's name; None for a run knob's."""
    backend, sep, option = name.partition(KNOB_SEP)
    return (backend, f"--{option}") if sep else None


def knob_applies(name: str, backend: str) -> bool:
    """A run knob applies to every backend, a backend knob to its own."""
    owner = split_knob(name)
    return owner is None or owner[0] == backend


def knob_option_args(name: str, value: str, backend: str) -> tuple[str, ...]:
    """capbench-cap's options for a backend knob of `backend` (a flag's "on": the flag, "off":
    nothing); () for a run knob, another backend's, or a capture program's (program_knob_values)."""
    owner = split_knob(name)
    if owner is None or owner[0] != backend or backend not in declared.backend_names():
        return ()
    option = declared.backend(backend).option(owner[1])
    if option is not None and option.type == "flag":
        return (owner[1],) if value == declared.FLAG_VALUES[1] else ()
    return (owner[1], value)


def program_knob_values(knobs: Iterable[tuple[str, str]], program: str) -> dict[str, str]:
    """{field: value} of a capture program's knobs in a configuration: its template's fields."""
    return {owner[1][2:]: v for n, v in knobs if (owner := split_knob(n)) is not None and owner[0] == program}


def with_knobs(step: Step, config: tuple[tuple[str, str], ...]) -> Step:
    """`step` with the knobs of `config` set: a run knob's value in its field."""
    fields = {RUN_KNOBS[n][0]: RUN_KNOBS[n][1](v) for n, v in config if n in RUN_KNOBS}
    return dataclasses.replace(step, knobs=config, **fields) if config else step


def knob_option(name: str, backends_known: Sequence[str]) -> declared.Option:
    """The option of backend knob `name` (a tunable one of a capbench-cap backend), or one line
    naming the knobs that backend has."""
    backend, flag = split_knob(name) or ("", "")
    if backend not in backends_known or backend not in declared.backend_names():
        raise UsageError(f"unknown knob {name!r}: a knob is {', '.join(RUN_KNOBS)}, on a port "
                         f"{', '.join(nic.NIC_KNOBS)}, BACKEND:OPTION of a "
                         f"capbench-cap backend ({', '.join(declared.backend_names())}) or PROGRAM:KNOB of a "
                         f"capture program's adapter")
    option = declared.backend(backend).option(flag)
    if option is None or not option.candidates:
        tunable = [o.name[2:] for o in declared.backend(backend).options if o.candidates]
        raise UsageError(f"{backend} has no knob {flag[2:]!r}: its knobs are "
                         f"{', '.join(tunable) or 'none'} (and {', '.join(RUN_KNOBS)})")
    return option


def check_knob_value(name: str, value: str, backends_known: Sequence[str],
                     programs: Mapping[str, Adapter] | None = None) -> str:
    """`value` if knob `name` takes it, else one line saying what it takes (`programs`: the capture
    programs' adapters, whose knobs are theirs)."""
    if name in RUN_KNOBS:
        RUN_KNOBS[name][1](value)
        return value
    if name in nic.NIC_KNOBS:  # a port's NIC setting: its driver's limits are checked on the port
        return nic.check_knob_text(name, value)
    owner = split_knob(name)
    if owner is not None and owner[0] in (programs or {}) and owner[0] not in declared.backend_names():
        adapter = (programs or {})[owner[0]]
        if owner[1][2:] not in adapter.knob_names:
            raise UsageError(f"{owner[0]} has no knob {owner[1][2:]!r}: its knobs are "
                             f"{', '.join(adapter.knob_names) or 'none'} (and {', '.join(RUN_KNOBS)})")
        return adapter.knob(owner[1][2:]).check(value, f"knob {name}")
    problem = knob_option(name, backends_known).value_problem(value)
    if problem:
        raise UsageError(f"knob {name} {value!r}: {problem}")
    return value


def parse_vary(value: Any, what: str, backends_known: Sequence[str],
               programs: Mapping[str, Adapter] | None = None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """{knob: values} (a campaign's table, or --vary KNOB=V1,V2 gathered so), each value checked."""
    if not isinstance(value, dict) or not value:
        raise UsageError(f"{what} must map knobs to their values, e.g. \"afp-v3:block-size\" = [\"1M\", \"4M\"]")
    out = []
    for name, values in value.items():
        texts = _listed(values, f"{what} {name}", lambda v, _w: str(v))
        out.append((str(name), tuple(check_knob_value(str(name), v, backends_known, programs) for v in texts)))
    return tuple(out)


def matrix_from(d: dict[str, Any], base: Matrix, where: str, backends_known: Sequence[str],
                name_of: Callable[[str], str] = str, cap_backends: Sequence[str] | None = None,
                programs: Mapping[str, Adapter] | None = None) -> Matrix:
    """A matrix: `base` with the keys of `d` replaced (values checked, `where` names the table,
    or is empty for the flags of `capbench run`)."""
    pre = f"{where}: " if where else ""
    m = base

    def known(key: str, what: str, names: Sequence[str]) -> tuple[str, ...]:
        """The list at `key`, each a name of `names`."""
        values = _tuple(d[key], f"{pre}{name_of(key)}")
        for x in values:
            if x not in names:
                raise UsageError(f"{pre}unknown {what} {x!r}: use {', '.join(names)}")
        return values

    if "methods" in d:
        m = dataclasses.replace(m, methods=known("methods", "method", METHODS))
    if "backends" in d:
        m = dataclasses.replace(m, backends=known("backends", "backend", backends_known))
    if "sizes" in d:
        v = d["sizes"]
        text = v if isinstance(v, str) else ",".join(str(x) for x in _tuple(v, f"{pre}{name_of('sizes')}"))
        m = dataclasses.replace(m, sizes=parse_sizes(text))
    if "pin" in d:
        m = dataclasses.replace(m, pins=tuple(check_pin(str(p)) for p in _tuple(d["pin"], f"{pre}{name_of('pin')}")))
    if "app_load" in d:
        m = dataclasses.replace(m, app_loads=tuple(check_app_load(str(a))
                                                   for a in _tuple(d["app_load"], f"{pre}{name_of('app_load')}")))
    if "procs" in d:
        procs = _tuple(d["procs"], f"{pre}{name_of('procs')}")
        if any(not isinstance(p, int) or not 1 <= p <= 64 for p in procs):
            raise UsageError(f"{pre}{name_of('procs')} must be whole numbers from 1 to 64, got {list(procs)}")
        m = dataclasses.replace(m, procs=procs)
    if "ring" in d:
        m = dataclasses.replace(m, rings=tuple(parse_ring(str(r)) for r in _tuple(d["ring"], f"{pre}{name_of('ring')}")))
    if "rx_ring" in d:
        m = dataclasses.replace(m, rx_rings=tuple(rxmode.parse_rx_ring(str(r))
                                                  for r in _tuple(d["rx_ring"], f"{pre}{name_of('rx_ring')}")))
    if "backend_args" in d:
        m = dataclasses.replace(m, backend_args=parse_backend_args(
            d["backend_args"], where, backends_known if cap_backends is None else cap_backends, name_of))
    if "duration" in d and "count" in d:
        raise UsageError(f"{pre}give {name_of('duration')} or {name_of('count')}, not both: a trial runs for a time "
                         f"or sends a number of frames")
    if "duration" in d:
        m = dataclasses.replace(m, durations=_listed(d["duration"], f"{pre}{name_of('duration')}",
                                                     lambda v, what: parse_duration(str(v), what=what)), counts=())
    if "count" in d:
        m = dataclasses.replace(m, counts=_listed(d["count"], f"{pre}{name_of('count')}", _frames))
    if "vary" in d:
        m = dataclasses.replace(m, vary=parse_vary(d["vary"], f"{pre}{name_of('vary')}",
                                                   backends_known if cap_backends is None else cap_backends,
                                                   programs))
    if "repeat" in d:
        if (isinstance(d["repeat"], bool) or not isinstance(d["repeat"], int)
                or not 1 <= d["repeat"] <= MAX_REPEAT):
            raise UsageError(f"{pre}{name_of('repeat')} must be a whole number from 1 to {MAX_REPEAT}, "
                             f"got {d['repeat']!r}")
        m = dataclasses.replace(m, repeat=d["repeat"])
    return m


def _listed(value: Any, what: str, read: Callable[[Any, str], Any]) -> tuple:
    """A list of values (a TOML array, or text separated by commas: a flag's "5,10"), each read by
    `read(value, what)`, in order and each once."""
    items = [t.strip() for t in value.split(",")] if isinstance(value, str) else list(_tuple(value, what))
    if any(isinstance(x, str) and not x for x in items):
        raise UsageError(f"cannot read {what} {str(value)[:40]!r}: give values separated by commas")
    return tuple(dict.fromkeys(read(x, what) for x in items))


def _frames(value: Any, what: str) -> int:
    """A frame count from 1 to MAX_FRAMES (a TOML integer, or digits)."""
    if isinstance(value, str) and value.replace("_", "").isdigit() and len(value) <= 20:
        value = int(value.replace("_", ""))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{what} must be whole numbers of frames, 1 or more, got {str(value)[:40]!r}")
    if value > MAX_FRAMES:
        raise UsageError(f"{what} {value:.4g} is above {MAX_FRAMES:,} frames, the most a trial sends")
    return value


def parse_backend_args(value: Any, where: str, backends_known: Sequence[str],
                       name_of: Callable[[str], str] = str) -> tuple[tuple[str, str], ...]:
    """{backend: "its capbench-cap options"}, checked for what capbench sets itself."""
    what = name_of("backend_args")
    pre = f"{where}: " if where else ""
    if not isinstance(value, dict):
        raise UsageError(f"{pre}{what} must map backends to their options, e.g. "
                         f"fanout = \"--workers 2 --fanout-mode lb\"")
    out = []
    for backend, opts in value.items():
        if backend not in backends_known:
            raise UsageError(f"{pre}{what} names unknown backend {backend!r}: use {', '.join(backends_known)}")
        if not isinstance(opts, str) or not opts.strip():
            raise UsageError(f"{pre}{what} for {backend} must be its options as one string, e.g. "
                             f"\"--workers 2\"")
        try:
            words = inputs.command_words(opts, f"{pre}{what} for {backend}")
        except ValueError as e:
            raise UsageError(f"{pre}{what} for {backend}: cannot split {opts!r}: {e}") from None
        own = [w.split("=", 1)[0] for w in words if w.split("=", 1)[0] in OWN_CAP_OPTIONS]
        if own:
            raise UsageError(f"{pre}{what} for {backend} sets {own[0]}, which capbench sets for every trial "
                             f"(see `capbench run --help`)")
        out.append((backend, shlex.join(words)))
    return tuple(sorted(out))


def _line_of(text: str, key: str, table: tuple[str, int] | None = None) -> int:
    """The line a key is set on (tomllib keeps no positions); 0 if not found.

    `table`: ("campaign", 0) or ("matrix", i) for the i-th [[matrix]] (0-based): only that
    table's lines count. A dotted key (`key.x = 1`) and a sub-table header (`[campaign.key]`,
    `[matrix.key]`) name the key too."""
    assign = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*[.=]")
    header = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]")
    section, matrix_n = "", -1
    for n, line in enumerate(text.splitlines(), start=1):
        m = header.match(line)
        if m:
            name = m.group(2).strip().split(".")
            if m.group(1) == "[[" and name == ["matrix"]:
                matrix_n += 1
            section = name[0]
            if len(name) > 1 and name[1].strip("\"'") == key and _in(table, section, matrix_n):
                return n
            continue
        if assign.match(line) and _in(table, section, matrix_n):
            return n
    return 0


def _in(table: tuple[str, int] | None, section: str, matrix_n: int) -> bool:
    if table is None:
        return True
    name, index = table
    return section == name and (name != "matrix" or matrix_n == index)


def read_text(path: Path | str) -> str:
    """The text of a campaign file: a regular UTF-8 file of at most inputs.CAMPAIGN_MAX_BYTES."""
    text = inputs.read_text(path, what="campaign", limit=inputs.CAMPAIGN_MAX_BYTES, missing_ok=True)
    if text is None:
        raise UsageError(f"no campaign file {inputs.shown(path)}: see campaigns/ for examples")
    return text


def load(path: Path | str, *, backends_known: Sequence[str]) -> Campaign:
    """Read a campaign file; every problem is one UsageError naming the file and the key."""
    return loads(read_text(path), Path(path), backends_known=backends_known)


def beside(campaign_file: Path, name: Any) -> Any:
    """A file a campaign names (apps_files), as an absolute path: a relative name is taken from the
    campaign file's folder, wherever capbench runs. Anything but a name is left for the checks."""
    if not isinstance(name, str) or not name:
        return name
    return os.path.join(os.path.abspath(campaign_file.parent), os.path.expanduser(name))


def loads(text: str, path: Path, *, backends_known: Sequence[str],
          apps_files: Sequence[str] | None = None) -> Campaign:
    """A campaign from the text of `path` (a resumed run keeps the text it started with, and passes
    `apps_files`: its adapter files as that run found them, since its results folder is not the
    campaign file's folder)."""
    try:
        doc = tomllib.loads(text)
    except ValueError as e:  # TOMLDecodeError, or an integer of thousands of digits
        raise UsageError(f"{path}: not valid TOML: {str(e)[:200]}") from None
    except RecursionError:
        raise UsageError(f"{path}: not valid TOML: arrays or tables nested too deep") from None
    unknown_tables = set(doc) - {"campaign", "matrix"}
    if unknown_tables:
        raise UsageError(f"{path}: unknown table(s) {', '.join(sorted(unknown_tables))}: use [campaign] and "
                         f"[[matrix]]")
    top = doc.get("campaign", {})
    matrices = doc.get("matrix", [])
    if not isinstance(top, dict) or not isinstance(matrices, list):
        raise UsageError(f"{path}: [campaign] must be a table and [[matrix]] an array of tables")
    if isinstance(top.get("apps_files"), list):
        given = top["apps_files"] if apps_files is None else apps_files
        top = top | {"apps_files": [beside(path, f) for f in given]}
    for where, table, keys, at in [("[campaign]", top, KEYS, ("campaign", 0))] + [
            (f"[[matrix]] #{i + 1}", t, MATRIX_KEYS, ("matrix", i)) for i, t in enumerate(matrices)]:
        unknown = set(table) - keys
        if unknown:
            key = sorted(unknown, key=lambda k: _line_of(text, k, at))[0]
            line = _line_of(text, key, at)
            raise UsageError(f"{path}{f' line {line}' if line else ''} {where}: unknown key {key!r}: use "
                             f"{', '.join(sorted(keys))}")
        _check_command_keys(table, text, f"{path}", where, at)
    try:
        return build(top, matrices, backends_known=backends_known, name=path.stem, where=f"{path} ")
    except UsageError as e:
        msg = str(e)
        raise UsageError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None


COMMAND_KEYS = ("apps", "backend_args")  # keys whose values are command lines, by name


def _check_command_keys(table: dict[str, Any], text: str, path: str, where: str, at: tuple[str, int]) -> None:
    """The command lines of a campaign file's table (apps, backend_args), each one a command can take
    (inputs.command_words: no NUL byte, nothing too long), checked as the file is read, so that the
    line says where; what is not a command line at all is left for the key's reader to say."""
    for key in COMMAND_KEYS:
        value = table.get(key)
        if not isinstance(value, dict):
            continue
        line = _line_of(text, key, at)
        for name, command in value.items():
            if isinstance(command, str):
                try:
                    inputs.command_words(command, f"{path}{f' line {line}' if line else ''} {where}: {key} {name}")
                except ValueError:
                    pass  # it does not split: the key's reader says so


def program_registry(files: Sequence[str], specs: Sequence[tuple[str, str]]) -> dict[str, Adapter]:
    """The capture programs' adapters: built-in, then the files', then the specs' (apps.registry);
    none may take a name of capbench-cap's backends."""
    return apps.registry([Path(f) for f in files], [f"{n}={t}" for n, t in specs],
                         reserved=declared.backend_names())


def _apps(value: Any, what: str) -> tuple[tuple[str, str], ...]:
    """[campaign] apps = {NAME = "COMMAND TEMPLATE"} (or --app NAME=TEMPLATE, gathered so)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise UsageError(f"{what} must map program names to command templates, e.g. "
                         f"{{ mytcpdump = \"tcpdump -i {{iface}} -w {{out}}\" }}")
    return tuple(sorted(value.items()))


def _strs(value: Any, what: str) -> tuple[str, ...]:
    values = _tuple(value, what)
    if not all(isinstance(v, str) and v for v in values):
        raise UsageError(f"{what} must be file names, got {list(values)}")
    return values


def build(top: dict[str, Any], matrices: Sequence[dict[str, Any]], *, backends_known: Sequence[str],
          name: str = Campaign.name, where: str = "", custom_cpus: tuple | None = None,
          name_of: Callable[[str], str] = str) -> Campaign:
    """A checked campaign from its [campaign] keys and [[matrix]] tables: what a campaign file
    holds, and what `capbench run`'s flags say (cli/run.py). Every problem is one UsageError that
    names the key as the user wrote it (`name_of`: the key itself, or its --flag). Besides
    `backends_known` (capbench-cap's), the capture programs of its adapters are backends too."""
    sensors = _tuple(top["sensors"], name_of("sensors")) if "sensors" in top else ()
    if sensors and ("backends" in top or any("backends" in t for t in matrices)):
        raise UsageError(f"{name_of('sensors')} names the backend of each sensor: give it instead of "
                         f"{name_of('backends')}, not with it")
    app_specs = _apps(top["apps"], name_of("apps")) if "apps" in top else ()
    app_files = _strs(top["apps_files"], name_of("apps_files")) if "apps_files" in top else ()
    programs = program_registry(app_files, app_specs)
    cap_backends = tuple(backends_known)
    backends_known = cap_backends + tuple(n for n in programs if n not in cap_backends)
    try:
        base = matrix_from(top, Matrix(), f"{where}[campaign]" if where else "",
                           backends_known, name_of, cap_backends, programs)
        built = tuple(matrix_from(t, base, f"{where}[[matrix]] #{i + 1}", backends_known, name_of, cap_backends,
                                  programs)
                      for i, t in enumerate(matrices)) or (base,)
        if sensors:
            known_sensors = matrix_from({"backends": list(sensors)}, Matrix(), "", backends_known, name_of).backends
            built = tuple(dataclasses.replace(m, backends=(step_backend(known_sensors),)) for m in built)
        def value_of(key: str, read: Callable[[Any], Any]) -> Any:
            """The key's value read by `read`, or its default (Campaign's field) when not given."""
            return read(top[key]) if key in top else default_of(key)

        c = Campaign(
            name=str(top.get("name", name)),
            link_bps=value_of("link", lambda v: parse_link(str(v))),
            rate=value_of("rate", lambda v: parse_rate(str(v)).text),
            trial_s=value_of("trial", lambda v: parse_duration(str(v), what=name_of("trial"))),
            precision_pct=value_of("precision", lambda v: _number(v, name_of("precision"))),
            max_rate=value_of("max_rate", lambda v: parse_rate(str(v)).text),
            loss_tolerance_frames=value_of("loss_tolerance", lambda v: _whole(v, name_of("loss_tolerance"), MAX_FRAMES)),
            steps_per_sweep=value_of("steps", lambda v: _whole(v, name_of("steps"), MAX_SWEEP_STEPS)),
            pause_s=value_of("pause", lambda v: parse_duration(str(v), what=name_of("pause"), allow_zero=True)),
            engine=value_of("engine", str),
            matrices=built,
            custom_cpus=custom_cpus,
            proc_cpus=_proc_cpus(top.get("proc_cpus"), name_of),
            groups=value_of("groups", lambda v: _whole(v, name_of("groups"), MAX_FRAMES)),
            group_size=value_of("group_size", lambda v: _whole(v, name_of("group_size"), MAX_FRAMES)),
            group_gap_s=value_of("group_gap", lambda v: parse_duration(str(v), what=name_of("group_gap"),
                                                                   allow_zero=True)),
            apps=app_specs,
            apps_files=app_files,
            sensors=sensors,
            tap_cpu=_proc_cpus(top["tap_cpu"], lambda _: name_of("tap_cpu"))[0] if "tap_cpu" in top else None,
            profile=value_of("profile", lambda v: _yes_no(v, name_of("profile"))),
            profile_hz=value_of("profile_hz", lambda v: _within(v, name_of("profile_hz"), *HZ_RANGE)),
            given=tuple(sorted(top)),
        )
    except (TypeError, ValueError) as e:
        raise UsageError(f"{where}a value has the wrong type: {e}") from None
    check(c, name_of)
    measured = {b for m in c.matrices for s in m.backends for b in sensor_backends(s)}
    for name, _ in app_specs:
        if name not in measured:
            raise UsageError(f"{name_of('apps')} {name}: add {name} to {name_of('backends')} (or "
                             f"{name_of('sensors')}): it is not measured otherwise")
    for backend in sorted(measured):
        program = c.program(backend)
        if program is not None:
            program.check()  # installed, a template with {iface}: before anything starts
    return c


def _number(value: Any, what: str) -> float:
    """A finite number (a TOML integer or float; not a string, not true/false)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{what} must be a number, got {value!r}")
    return float(value)


def _whole(value: Any, what: str, most: int) -> int:
    """A whole number from 0 to `most` (a TOML integer, or a flag's)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{what} must be a whole number, got {str(value)[:40]!r}")
    if value > most:
        raise UsageError(f"{what} is above {most:,}, the most capbench takes")
    return value


def _yes_no(value: Any, what: str) -> bool:
    """true or false (a TOML boolean, or a flag's)."""
    if not isinstance(value, bool):
        raise UsageError(f"{what} must be true or false, got {str(value)[:40]!r}")
    return value


def _within(value: Any, what: str, least: int, most: int) -> int:
    """A whole number from `least` to `most`."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise UsageError(f"{what} must be a whole number from {least:,} to {most:,}, got {str(value)[:40]!r}")
    return value


def _proc_cpus(value: Any, name_of: Callable[[str], str]) -> tuple[int, ...] | None:
    if value is None:
        return None
    cpus = _tuple(value, name_of("proc_cpus"))
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cpus):
        raise UsageError(f"{name_of('proc_cpus')} must be CPU numbers (0, 1, ...), got {list(cpus)}")
    return cpus


def ring_options_in(backend: str, words: Sequence[str]) -> list[str]:
    """The options among `words` (a backend's own options, as words) that size the buffer --ring
    sizes (declared.RingSpec.options): [] for a backend --ring does not size."""
    spec = declared.backend(backend).ring if backend in declared.backend_names() else None
    return [o for o in spec.options if option_value(list(words), o) is not None] if spec is not None else []


def check_set_once(m: Matrix, name_of: Callable[[str], str] = str) -> None:
    """A knob is set in one place: a run setting by its axis or by a knob, a backend's option by
    its --backend-args or by a knob, and its buffer by --ring or by the options --ring maps to
    (a later --block-size would win over --ring's, and the trial be labelled with a buffer it
    did not run). Also: a backend knob's backend is measured."""
    varied = dict(m.vary)
    for name, (_, _, axis) in RUN_KNOBS.items():
        if name in varied and axis is not None and getattr(m, axis) != default_of(_keyed_name(axis)):
            raise UsageError(f"{name_of(_keyed_name(axis))} and {name_of('vary')} {name} both set {name}: give one")
    for name in varied:
        owner = split_knob(name)
        if owner is not None and owner[0] not in m.backends:
            raise UsageError(f"{name_of('vary')} {name}: {owner[0]} is not measured (backends "
                             f"{', '.join(m.backends)}): add it to {name_of('backends')}")
    ring_from = name_of("ring") if m.rings != default_of("ring") else f"{name_of('vary')} ring"
    ring_given = m.rings != default_of("ring") or "ring" in varied
    for backend, args in dict(m.backend_args).items():
        words = shlex.split(args)
        for name in varied:
            owner = split_knob(name)
            if owner is not None and owner[0] == backend and option_value(words, owner[1]) is not None:
                raise UsageError(f"{name_of('backend_args')} for {backend} sets {owner[1]}, which "
                                 f"{name_of('vary')} {name} varies: give it in one of them")
    for backend in m.backends:
        spec = declared.backend(backend).ring if backend in declared.backend_names() else None
        if spec is None or not ring_given:
            continue
        words = shlex.split(dict(m.backend_args).get(backend, ""))
        owned = [split_knob(n) for n in varied if split_knob(n) is not None]
        clashes = ([(name_of("backend_args"), o) for o in ring_options_in(backend, words)]
                   + [(name_of("vary"), o) for b, o in owned if b == backend and o in spec.options])
        for where, option in clashes:
            raise UsageError(f"{ring_from} and {where} {option} both set {backend}'s buffer (--ring is "
                             f"{spec.text()}): give one of them")


def _keyed_name(field_name: str) -> str:
    """The [campaign] key of a Matrix field."""
    return next(f.metadata["key"] for f in dataclasses.fields(Matrix) if f.name == field_name)


def check(c: Campaign, name_of: Callable[[str], str] = str) -> None:
    """What no single key can say: the rate against every frame length, the search methods'
    fixed lengths, the search parameters, the backends' limits. (A profile's frame lengths
    and mean wire rate are the generator's to check: preflight.check_profiles.)"""
    rate = c.load
    methods = {x for m in c.matrices for x in m.methods}
    at_rate = {x for x in methods if not registry.get(x).sets_own_load}  # iperf: the others choose their loads
    if "rate" in c.given and not at_rate:
        which = ", ".join(sorted(methods)) + (" chooses its" if len(methods) == 1 else " choose their")
        raise UsageError(f"{name_of('rate')} sets the load of the iperf method, and {which} own loads: leave "
                         f"it out, or add iperf to {name_of('methods')}")
    if c.max_load is not None:
        capped = [m.name for m in registry.REGISTRY.values() if m.takes_max_load]
        if not any(registry.get(x).takes_max_load for x in methods):
            raise UsageError(f"{name_of('max_rate')} is the highest load of the searches ({', '.join(capped)}): "
                             f"give one in {name_of('methods')}, or {name_of('rate')} for the iperf method")
        for size in {s for m in c.matrices for s in m.sizes if isinstance(s, int)}:
            pps = c.max_load.pps(size, c.link_bps)
            if pps is None:
                raise UsageError(f"{name_of('max_rate')} max: give a paced rate, e.g. 50% or 500kpps")
            if pps > wire_pps(c.link_bps, size) * (1 + 1e-9) + 0.5:
                raise UsageError(f"{name_of('max_rate')} {c.max_rate} is above the wire rate of {size} B frames "
                                 f"({wire_pps(c.link_bps, size):,.0f} pps): give a percentage, e.g. 50%")
    if bool(c.groups) != bool(c.group_size) or (c.group_gap_s and not c.groups):
        raise UsageError(f"{name_of('groups')} N and {name_of('group_size')} PKTS go together (and "
                         f"{name_of('group_gap')} with them): give both")
    if c.groups and (methods - at_rate or any(isinstance(s, str) for m in c.matrices for s in m.sizes)):
        raise UsageError(f"{name_of('groups')} works with the iperf method at fixed frame lengths (the searches "
                         f"choose their own loads and trial lengths)")
    if c.groups and rate.pps(64, c.link_bps) is None:
        raise UsageError(f"{name_of('groups')} needs a paced {name_of('rate')}, not max: the groups' pauses are "
                         f"kept on a schedule")
    if c.groups * c.group_size > MAX_FRAMES:
        raise UsageError(f"{name_of('groups')} x {name_of('group_size')} is {c.groups * c.group_size:.4g} frames, "
                         f"more than {MAX_FRAMES:,}, the most a trial sends")
    for size in {s for m in c.matrices for s in m.sizes} if c.groups else ():
        took_s = c.trial_duration_s(Step("iperf", "", size, "", None, 1, 1, duration_s=0.0))
        if took_s > MAX_DURATION_S:
            raise UsageError(f"{name_of('groups')}: the groups take {took_s:,.0f} s at {size} B, "
                             f"longer than {MAX_DURATION_TEXT}, the most a trial lasts")
    steps = sum(m.size for m in c.matrices)
    if steps > MAX_STEPS:
        raise UsageError(f"the campaign makes {steps:,} steps, more than {MAX_STEPS:,}: give fewer "
                         f"{name_of('sizes')} (a larger step in a range), run lengths or settings")
    counted = [m for m in c.matrices if m.counts]
    if counted and not at_rate:
        raise UsageError(f"{name_of('count')} sets the frames of an iperf trial: add iperf to "
                         f"{name_of('methods')}, or leave it out (the searches choose their own trial lengths)")
    if counted and c.groups:
        raise UsageError(f"{name_of('count')} and {name_of('groups')}: the groups say how many frames a trial "
                         f"sends: give one of them")
    if counted and rate.pps(64, c.link_bps) is None:
        raise UsageError(f"{name_of('count')} needs a paced {name_of('rate')}, not max: the trial's time is bounded "
                         f"by the rate")
    for m in counted:
        for size in m.sizes:
            longest = max(m.counts) / c.count_pps(size)
            if longest > MAX_DURATION_S:
                raise UsageError(f"{name_of('count')} {max(m.counts):,} takes {longest:,.0f} s at {c.rate} and "
                                 f"{size} B, longer than {MAX_DURATION_TEXT}, the most a trial lasts")
    measured = {b for m in c.matrices for b in m.backends}
    for backend in sorted({b for m in c.matrices for b, _ in m.backend_args} - measured):
        raise UsageError(f"{name_of('backend_args')} names {backend}, which no matrix measures (backends "
                         f"{', '.join(sorted(measured))}): add it to {name_of('backends')} or leave its options out")
    for m in c.matrices:
        check_set_once(m, name_of)
        for size in m.sizes:
            if isinstance(size, int):
                rate.check(size, c.link_bps)
        if any(not registry.get(x).takes_profiles for x in m.methods) and any(isinstance(x, str) for x in m.sizes):
            raise UsageError(f"the search methods run at fixed frame lengths: give lengths in {name_of('sizes')}, "
                             f"not profiles (profiles work with the iperf method)")
        # Backends that attach an XDP program with the options given: an interface holds one, so one process.
        args = dict(m.backend_args)
        xdp = [b for s in m.backends for b in sensor_backends(s)
               if c.program(b) is None and declared.backend(b).ran_with(shlex.split(args.get(b, ""))).own_xdp]
        if xdp and any(n > 1 for n in m.procs):
            raise UsageError(f"{name_of('procs')} {max(m.procs)} with {', '.join(xdp)}: an interface holds one XDP "
                             f"program, so one such capture process at a time: use procs 1 for them, or "
                             f"backends that share an interface ({declared.shared_interface_backends()})")
        for method in m.methods:
            least = registry.get(method).min_trial_s  # RFC 2544 26.1 asks for 60 s
            if least and c.trial_s is not None and c.trial_s < least:
                raise UsageError(f"{name_of('trial')} {c.trial_s:g} s: {method} trials last at least {least:g} s "
                                 f"(RFC 2544 asks for 60 s)")
    if c.sensors:
        if len(c.sensors) < 2:
            raise UsageError(f"{name_of('sensors')} {','.join(c.sensors)}: give two or more sensors (one is "
                             f"{name_of('backends')})")
        if len(c.sensors) > MAX_SENSORS:
            raise UsageError(f"{name_of('sensors')}: at most {MAX_SENSORS} sensors")
        alone = sorted(x for x in methods if not registry.get(x).takes_sensors)
        if alone:
            raise UsageError(f"{name_of('methods')} {', '.join(alone)} measures one capture at a time: with "
                             f"{name_of('sensors')} use "
                             f"{', '.join(n for n, m in registry.REGISTRY.items() if m.takes_sensors)}")
    elif c.tap_cpu is not None:
        raise UsageError(f"{name_of('tap_cpu')} places the tap of {name_of('sensors')}: give both")
    if "profile_hz" in c.given and not c.profile:
        raise UsageError(f"{name_of('profile_hz')} sets the sampling rate of {name_of('profile')}: give both")
    if not 0 < c.precision_pct < 100:
        raise UsageError(f"{name_of('precision')} {c.precision_pct:g}: give a share of the wire rate above 0 and "
                         f"below 100 %")
    if c.loss_tolerance_frames < 0:
        raise UsageError(f"{name_of('loss_tolerance')} {c.loss_tolerance_frames}: give 0 or more frames")
    if c.steps_per_sweep < 2:
        raise UsageError(f"{name_of('steps')} {c.steps_per_sweep}: a sweep needs at least 2 steps")
    engines = declared.engine_names()
    if c.engine not in engines:
        raise UsageError(f"unknown {name_of('engine')} {c.engine!r}: use {' or '.join(engines)}")
