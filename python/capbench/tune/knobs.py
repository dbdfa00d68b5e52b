"""Knobs: the settings `capbench tune` searches and `capbench run --vary` varies (issue 30).

A knob is one setting that changes how a capture stack loses: capbench's own run settings
(`--ring`, the capture buffer; `--rx-ring`, the test bed's receive ring; `--pin`, where the
counter runs beside the receive work), a host setting each step holds (`backlog`, the receive
CPU's backlog queue: net.core.netdev_max_backlog, through the host-settings registry) and,
declared by each backend in its C option table, the options a backend marks tunable with their
candidates (`capbench-cap --describe`: an option's `candidates`), named "BACKEND:OPTION"
("afp-v3:block-size"). A knob is set in one place only:
`--ring` and the backend options it maps to set one buffer, so a configuration (or a run) that
gives both is refused in one line (campaign.matrix.check_set_once, the one place that says so).

What a knob's value does to a step (a run knob's Step field, a backend knob's option) is
campaign.matrix's (RUN_KNOBS, knob_option_args); this module declares the space: each knob's
candidates, default and the account layers it governs.

On the user's own ports (`--gen-iface/--cap-iface`) the capture port's NIC adds its knobs
(testbed.nic.NIC_KNOBS): its receive ring (`nic-ring`, ethtool -G rx), interrupt coalescing
(`nic-rx-usecs`, -C rx-usecs) and channels (`nic-channels`, -L combined, or rx where the driver has
no combined ones), their candidates from what the driver reports (`ethtool -g`/`-l` maximums) and
their default the value it runs now; each configuration's are held on the port and put back
(testbed.ports.StepSettings). The veth test bed has none of them (one line), and a port has no
`rx-ring` (the veth test bed's ring).

A capture program's knobs are its adapter's (apps.toml `[NAME.knobs.KNOB]`, a field of its
command template: tcpdump's `-B {buffer}`), named "PROGRAM:KNOB": those of the built-in adapters,
or of the run's own (`programs`: a campaign's adapters, with its --apps-file and --app ones).

Not a knob here: the poll thread's scheduling (`--napi-sched other|fifo:50`) is the test bed's,
built once per run, so one run cannot vary it by configuration: compare it in two runs (two
test beds).

A configuration is a mapping knob name -> value text (the value as the user would write it);
`apply` turns it into the Matrix whose trials run it, `run_args` into a ready `capbench run`
line, `label` into the words a table and a figure show.
"""

from __future__ import annotations

import dataclasses
import shlex
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from capbench import declared
from capbench.campaign import matrix as campaign
from capbench.campaign.matrix import MAX_RING, Matrix
from capbench.errors import UsageError
from capbench.methods import registry
from capbench.methods.measurer import superseded
from capbench.methods.verdict import measured
from capbench.options import option_value
from capbench.report.keys import DEFAULTS, step_base
from capbench.testbed import host_sysctl, nic, ports, rxmode
from capbench.trial import apps, loss_layers
from capbench.trial.accounting import format_pct
from capbench.trial.record import TrialResult

Config = Mapping[str, str]  # knob name -> value, as the user writes it ("4M", "1024")


@dataclass(frozen=True)
class Knob:
    """One setting a search may change."""

    name: str  # as --knobs and --vary name it: "ring", "rx-ring", "afp-v3:block-size"
    flag: str  # what sets it: capbench run's "--ring", the backend's "--block-size", a template's
    # "{buffer}", the host's sysctl "net.core.netdev_max_backlog", a NIC's "ethtool -G rx"
    scope: str  # "run": a capbench run setting (a Matrix field); "backend": one backend's option or
    # program's template field; "host": a host setting each step holds (set by --vary, no run flag);
    # "port": a setting of the capture port's NIC (testbed.nic.NIC_KNOBS), on ports only
    candidates: tuple[str, ...]  # the values a search tries, ascending
    default: str  # what runs when it is not set ("" : the backend's or test bed's own)
    governs: tuple[str, ...] = ()  # the account layers ("rx ring", "socket") whose loss it changes
    backend: str | None = None  # scope "backend": whose option it is
    # The test bed's receive models (rxmode) where frames pass what it sets; () : every one.
    rx_modes: tuple[str, ...] = ()

    def applies(self, rx_mode: str) -> bool:
        """Whether a run in receive model `rx_mode` passes what this knob sets."""
        return not self.rx_modes or rx_mode in self.rx_modes


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
# The placements a search tries: the counter on the receive work's CPU, and on another.
PIN_CANDIDATES = ("A:A", "A:B")
# The receive CPU's backlog queue (net.core.netdev_max_backlog), in packets: from a quarter of the
# kernel's default of 1000 to 65,536 (65 ms of frames at 1 Mpps: a deeper queue only hides a longer
# stop of the receive CPU), by fours: 256, 1024, 4096, 16384, 65536.
BACKLOG_RANGE = (256, 65536)
BACKLOG_CANDIDATES = tuple(str(n) for n in _by_fours(*BACKLOG_RANGE))
# The backlog knob: a host setting (scope "host") the runner holds at exactly the step's value
# (veth_pair.hold_backlog); by default the host's own. It governs the backlog layer, where RPS
# puts the frames (rxmode.BACKLOG_MODES).
BACKLOG = Knob("backlog", host_sysctl.BACKLOG, "host", BACKLOG_CANDIDATES, "", (loss_layers.BACKLOG,),
               rx_modes=rxmode.BACKLOG_MODES)


def _governed(backend: declared.Backend | None, flags: Sequence[str]) -> tuple[str, ...]:
    """The layers of `backend`'s account whose explanation names one of `flags`: the rows say
    what governs them ("--block-count x --block-size (capbench --ring) ... govern it")."""
    rows = (backend.account or ()) if backend is not None else ()
    return tuple(dict.fromkeys(r.layer for r in rows if not r.cross_check and any(f in r.explains for f in flags)))


def _value_text(option: declared.Option, v: int | str) -> str:
    """A candidate or default as a user writes it: bytes as 64k, 4M."""
    return _bytes_text(v) if option.type == "bytes" and isinstance(v, int) else str(v)


def _default_text(option: declared.Option) -> str:
    """The option's default as a knob's value; "" where it is words ("--ring-size", "1, or one
    per --worker-cpus"): the program's own."""
    if option.type == "flag":
        return declared.FLAG_VALUES[0]
    d = option.default
    if isinstance(d, int) and not isinstance(d, bool):
        return _value_text(option, d)
    return d if isinstance(d, str) and option.type == "choice" else ""


def _backend_knob(b: declared.Backend, option: declared.Option) -> Knob:
    # An option --ring maps to governs what --ring governs, where a row names only --ring.
    ring_option = b.ring is not None and option.name in b.ring.options
    return Knob(f"{b.name}{campaign.KNOB_SEP}{option.name[2:]}", option.name, "backend",
                tuple(_value_text(option, v) for v in option.candidates), _default_text(option),
                _governed(b, (option.name, "--ring") if ring_option else (option.name,)), b.name)


Port = tuple[str | None, str]  # the capture port: (its namespace, None: capbench's own; its name)


def _port_knob(reading: nic.KnobReading) -> Knob:
    """A NIC knob of the capture port: its candidates from the driver, its default what it runs now.
    Each governs the NIC's own drops (the NIC layer on a port: its receive ring had no room): the
    ring's depth, how long frames wait there for an interrupt, how many rings share the load."""
    k = reading.knob
    return Knob(k.name, f"ethtool {nic.GROUPS[k.group][1]} {reading.param}", "port", reading.candidates(),
                str(reading.current), PORT_GOVERNS)


# What a NIC knob governs: the NIC's own drops (its receive ring had no room).
PORT_GOVERNS = (loss_layers.NIC,)


def _recorded_port_knobs(desc: Mapping[str, Any]) -> tuple[Knob, ...]:
    """The NIC knobs of a port as a trial recorded it (testbed.nic.describe): their names and what
    they govern, for the advice (their candidates are the driver's, read when a search starts)."""
    return tuple(Knob(name, f"ethtool {nic.GROUPS[nic.NIC_KNOBS[name].group][1]}", "port", (), "", PORT_GOVERNS)
                 for name in nic.knobs_described(desc))


def _port_knobs(port: Port | None, names: Sequence[str] | None) -> tuple[Knob, ...]:
    """The NIC knobs of `port` (those `names` names, or every one its driver can change); on the
    veth test bed (None) a NIC knob named is one line."""
    if port is None:
        ports.check_veth_bed(names or ())
        return ()
    out = []
    for name in nic.NIC_KNOBS:
        if names is not None and name not in names:
            continue
        try:
            out.append(_port_knob(nic.read_knob(*port, name)))
        except UsageError:
            if names is not None:  # asked for: why this port cannot (ethtool's own reason)
                raise
    return tuple(out)


def _run_knobs(backend: str, on_port: bool = False, backend_args: Sequence[str] = ()) -> tuple[Knob, ...]:
    # As the backend runs with its --backend-args: dpdk on net_af_packet has no XDP program of its own.
    b = declared.backend(backend).ran_with(backend_args) if backend in declared.backend_names() else None
    knobs = [Knob("pin", "--pin", "run", PIN_CANDIDATES, campaign.default_text("pin"))]
    # A backend with its own XDP program (afxdp, xdp) takes frames in the veth's poll, before the
    # cpumap ring: its trials run as napi and --rx-ring is refused with it (testbed/rxmode.py).
    # A port's receive ring is its NIC's (nic-ring).
    if not on_port and (b is None or not b.own_xdp):
        knobs.insert(0, Knob("rx-ring", "--rx-ring", "run", RX_RING_CANDIDATES, str(rxmode.DEFAULT_RX_RING),
                             (loss_layers.RX_RING,), rx_modes=("cpumap",)))  # the cpumap model's ring
    if b is not None and b.ring is not None:
        knobs.insert(0, Knob("ring", "--ring", "run", RING_CANDIDATES, "", _governed(b, ("--ring",))))
    # A backend with its own XDP program takes its frames in XDP, before any backlog queue; on ports
    # the backlog is --backlog's (a run's own ports are refused a backlog knob).
    if not on_port and (b is None or not b.own_xdp):
        knobs.append(BACKLOG)
    return tuple(knobs)


def _program_knob(program: str, k: apps.AdapterKnob) -> Knob:
    """A capture program's knob (its adapter's `knobs`): a field of its command template."""
    return Knob(f"{program}{campaign.KNOB_SEP}{k.name}", f"{{{k.name}}}", "backend", k.candidates, k.default,
                k.governs, program)


Programs = Mapping[str, apps.Adapter]  # the capture programs' adapters a run knows, by name


def _programs(programs: Programs | None) -> Programs:
    """The adapters given, else the built-in ones (apps.toml)."""
    return apps.builtin() if programs is None else programs


def _all(backend: str, port: Port | None = None, names: Sequence[str] | None = None,
         programs: Programs | None = None, backend_args: Sequence[str] = ()) -> tuple[Knob, ...]:
    return (_run_knobs(backend, port is not None, backend_args) + _port_knobs(port, names)
            + _own_knobs(backend, programs))


def fixed_by(k: Knob, backend: str, backend_args: Sequence[str]) -> str | None:
    """The option of `backend_args` (the backend's --backend-args, as words) that already sets what
    `k` would vary, if any: the knob's own option, or for `ring` one of the options it maps to."""
    if k.scope == "backend" and k.backend == backend:
        return k.flag if option_value(list(backend_args), k.flag) is not None else None
    if k.name == "ring":
        return next(iter(campaign.ring_options_in(backend, backend_args)), None)
    return None


def _own_knobs(backend: str, programs: Programs | None = None) -> tuple[Knob, ...]:
    """A backend's tunable options, or a capture program's adapter's knobs (built in, or of the
    run's adapter files)."""
    if backend in declared.backend_names():
        b = declared.backend(backend)
        return tuple(_backend_knob(b, o) for o in b.options if o.candidates)
    adapter = _programs(programs).get(backend)
    return tuple(_program_knob(backend, k) for k in adapter.knobs) if adapter is not None else ()


def _finer(k: Knob, knobs: Sequence[Knob]) -> bool:
    """"ring" where the backend's own knobs set the same buffer in detail (afp-v3's block size
    and count): the two are one knob, and the default space keeps the finer."""
    return k.name == "ring" and any(o.scope == "backend" and (b := declared.backend(o.backend)).ring is not None
                                    and o.flag in b.ring.options for o in knobs)


# The default space (no --knobs) must fit the budget of issue 30's target, 15 minutes for afp-v3 at
# 64 B: placement is searched only when asked (it moves the counter to the generator's CPU, another
# experiment), and each knob tries DEFAULT_CANDIDATES of its candidates: both ends of its range and
# its default (the middle one where the default is an end or none). Three knobs of three: 27
# configurations.
ASKED_ONLY = ("pin",)
DEFAULT_CANDIDATES = 3


def _spread(k: Knob) -> Knob:
    """`k` with DEFAULT_CANDIDATES of its candidates: the first, the last, and its default (or the
    middle one)."""
    c = k.candidates
    if len(c) <= DEFAULT_CANDIDATES:
        return k
    inner = k.default if k.default in c[1:-1] else c[(len(c) - 1) // 2]
    return dataclasses.replace(k, candidates=tuple(v for v in c if v in (c[0], inner, c[-1])))


def space(backend: str, names: Sequence[str] | None = None, port: Port | None = None,
          programs: Programs | None = None, rx_mode: str = rxmode.DEFAULT_RX_MODE,
          backend_args: Sequence[str] = ()) -> tuple[Knob, ...]:
    """The knobs of `backend` on the test bed (or on `port`, the capture port of a run on ports): by
    default its own and the test bed's (the port's) with a few candidates each (_spread; not `ring`
    where the backend's own knobs size the same buffer: a configuration sets one of them; not the
    ASKED_ONLY), or those `names` names with every candidate (an unknown name is one line naming
    the knobs there are). A capture program's own are its adapter's in `programs` (default: the
    built-in adapters). Only the knobs the test bed's receive model `rx_mode` passes (Knob.applies):
    one named that it does not is one line. `backend_args`: the backend's own options fixed for
    every configuration (--backend-args, as words): the knobs they set are left out, and one named
    is one line."""
    knobs = _all(backend, port, names, programs, backend_args)
    if names is None:
        return tuple(_spread(k) for k in knobs if not _finer(k, knobs) and k.name not in ASKED_ONLY
                     and k.applies(rx_mode) and fixed_by(k, backend, backend_args) is None)
    by_name = {k.name: k for k in knobs}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"{backend} has no knob {unknown[0]!r}: its knobs are {', '.join(by_name)} "
                         f"(capbench tune --help)")
    for n in names:
        check_applies(by_name[n], rx_mode)
        option = fixed_by(by_name[n], backend, backend_args)
        if option is not None:
            raise UsageError(f"--backend-args for {backend} sets {option}, which knob {n} would vary: leave "
                             f"{n} out of --knobs, or {option} out of --backend-args")
    return tuple(by_name[n] for n in names)


def check_applies(knob: Knob, rx_mode: str) -> None:
    """One line unless the test bed's receive model `rx_mode` passes what `knob` sets."""
    if not knob.applies(rx_mode):
        raise UsageError(f"knob {knob.name} sets what only --rx-mode {' or '.join(knob.rx_modes)} passes (this run's "
                         f"is {rx_mode}): add --rx-mode {knob.rx_modes[0]}, or leave out {knob.name}")


def check(knob: Knob, value: str, programs: Programs | None = None) -> str:
    """`value` if `knob` takes it, else one line saying its range (`programs` as for `space`)."""
    return campaign.check_knob_value(knob.name, value, declared.backend_names(), _programs(programs))


def apply(matrix: Matrix, config: Config, knobs: Sequence[Knob], programs: Programs | None = None) -> Matrix:
    """`matrix` (of one backend) with every knob of `config` set: the Matrix its trials run (its
    steps carry the configuration, its records keep it). A knob set twice (`ring` with the options
    it maps to, or with the matrix's own --ring) is one line. `programs` as for `space`."""
    by_name = {k.name: k for k in knobs}
    for name, value in config.items():
        check(by_name[name], value, programs)
    vary = dict(matrix.vary) | {name: (value,) for name, value in config.items()}
    out = dataclasses.replace(matrix, vary=tuple(vary.items()))
    campaign.check_set_once(out)
    return out


def label(config: Config) -> str:
    """"ring=4M rx-ring=1024", in the order the knobs were given; "defaults" when none is set."""
    return campaign.config_text(config.items()) or DEFAULTS


def run_args(config: Config, knobs: Sequence[Knob]) -> list[str]:
    """The `capbench run` arguments that set `config` (the best configuration as a ready line):
    a run knob's own flag, a backend's or host knob's --vary of one value (`--backlog N` would
    hold the backlog at N or more for the whole run, not at N)."""
    by_name = {k.name: k for k in knobs}
    out: list[str] = []
    for name, value in config.items():
        k = by_name[name]
        if k.scope == "run":
            out += [k.flag, value]
        else:
            out += ["--vary", f"{name}={value}"]
    return out


# --- advice: the knob that governs where a run lost (capbench run's end) -----------------------


def advice_lines(trials: Iterable[TrialResult], port_args: Sequence[str] = ()) -> list[str]:
    """One line per lossy configuration of a run's iperf-like trials (the repetitions of a step
    together, judged on the one with the median loss), where a counter shows loss in a layer
    that a knob governs (Knob.governs against the account's layers): the layers, their counters,
    the knobs and the `capbench tune` line that searches them. Nothing where no counter shows
    the loss in such a layer (the loss is the host's, or no knob governs its layer). On ports the
    NIC knobs its driver showed (the trial's `nic`), and the tune line takes the run's `port_args`."""
    steps: dict[str, list[TrialResult]] = {}
    for r in trials:
        if registry.constant_load(r.method) and not superseded(r) and measured(r) and r.step:
            steps.setdefault(step_base(r.step), []).append(r)
    out = []
    for rs in steps.values():
        if statistics.median(r.loss_pct for r in rs) <= 0:
            continue
        r = sorted(rs, key=lambda x: x.loss_pct)[(len(rs) - 1) // 2]
        # one knob per setting, of those a search could change on the test bed `r` ran on (the
        # receive ring's depth is the cpumap model's: the veth's own 256 frames cannot grow)
        knobs = (_run_knobs(r.backend, True) + _recorded_port_knobs(r.nic) + _own_knobs(r.backend) if r.ports
                 else space(r.backend, rx_mode=r.rx_mode))
        found = [(layer, n, counter, [k.name for k in knobs if layer in k.governs])
                 for layer, n, counter in loss_layers.layers(r)]
        found = [f for f in found if f[3]]
        if not found:
            continue
        names = list(dict.fromkeys(name for *_, governing in found for name in governing))
        where = "; ".join(f"the {layer} layer lost {n:,} ({counter}), governed by {', '.join(governing)}"
                          for layer, n, counter, governing in found)
        fixed = r.size_label.isdigit()
        size = f"--sizes {r.size_label}" if fixed else f"--size {r.size_label}"
        loss = format_pct(r.loss_pct, exact_zero=r.lost == 0)
        on_port = f" {shlex.join(port_args)}" if r.ports and port_args else ""
        out.append(f"{r.backend} {r.size_label}{' B' if fixed else ''} lost {loss} %: {where}; search them: "
                   f"capbench tune --backends {r.backend} {size}{on_port} --knobs {','.join(names)}")
    return out
