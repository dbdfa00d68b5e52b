"""The default test bed: two private network namespaces joined by a veth pair.

    capbench-<id>-gen  [cb<id>g] ==== veth ==== [cb<id>c]  capbench-<id>-cap
    generator side                                capture side

`id` is 6 random hex digits, so parallel runs and tests do not collide.
IPv6 is disabled in both namespaces before the veth appears (otherwise the
kernel would send router solicitations: foreign frames in a capture). Where
the capture side's receive work runs is the test bed's receive model
(`rx_mode`, see capbench.testbed.rxmode): a NAPI kernel thread on the receive CPU
(napi), or the sender's softirq with RPS to the receive CPU (rps).

A state file /run/capbench/testbeds/<id>.json records the owner's pid (and its
start time, against pid reuse), and `kept` once a test bed built to be kept
(`testbed up`, whose owner ends at once) is complete. `destroy_stale()` removes
every capbench-* namespace whose owner is gone and that was not kept: the
leftovers of crashed runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from capbench import held_signals
from capbench.testbed import cpu
from capbench.testbed import host_sysctl
from capbench.testbed import hygiene
from capbench.testbed import netns
# Imported for the host settings they declare (owners.declare), so that whoever destroys a test bed
# knows every setting one can hold: nic also registers the "ethtool" kind's accessor.
from capbench.testbed import nic  # noqa: F401
from capbench.testbed import rxmode
from capbench.errors import RunError, Terminated, UsageError
from capbench.owners import (HostSettings, Holder, open_folder, owned, process_alive,
                            process_start_ticks, state_folder)

STATE_DIR_ENV = "CAPBENCH_STATE_DIR"
STATE_SUBDIR = "testbeds"  # in this user's state folder (owners.state_folder)
NS_RE = re.compile(r"^capbench-([0-9a-f]{6})-(gen|cap|s[0-9]+)$")
# The most sensors on one stream (the tap's devmap, CB_TAP_MAX_TARGETS in xdp_counts.h).
MAX_SENSORS = 64
GEN_MAC = "02:cb:00:00:01:01"
CAP_MAC = "02:cb:00:00:01:02"
# Where the generator sends: a MAC no interface has, so the capture side sees the
# frames as PACKET_OTHERHOST, as a capture host sees traffic not meant for it. The
# packet sockets get them; the IP stack drops them at once instead of routing them.
DST_MAC = "02:cb:00:00:00:02"


def state_dir() -> Path:
    """Where this user's test beds have their state files: root's in /run/capbench, another user's
    (a run with capabilities only) in their own state folder (owners.state_folder)."""
    return Path(os.environ.get(STATE_DIR_ENV) or state_folder() / STATE_SUBDIR)


def state_dirs() -> tuple[Path, ...]:
    """Where test beds' state files are read: this user's folder, and for a user other than root
    root's too (read only, never written): namespaces are the host's, whoever made them, and root's
    folder is root's alone."""
    own = state_dir()
    root = state_folder(0) / STATE_SUBDIR
    return (own,) if os.environ.get(STATE_DIR_ENV) or own == root else (own, root)


@dataclass(frozen=True)
class Testbed:
    """Names of one test bed; everything a trial needs to address it.

    A Measurer also runs on hand-made set-ups: gen_ns/cap_ns None run the programs in
    capbench's own namespace (two real NICs cabled together, say).
    """

    id: str
    gen_ns: str | None
    cap_ns: str | None
    gen_if: str
    cap_if: str
    gen_mac: str
    cap_mac: str
    rx_cpu: int | None  # CPU that does the capture side's receive work; None: not steered
    dst_mac: str = DST_MAC
    backlog: int | None = None  # net.core.netdev_max_backlog raised for this test bed (host_sysctl)
    # The receive model (rxmode.RX_MODES). A hand-made set-up (real NICs) is "rps": capbench
    # leaves its NAPI alone and steers at most its RPS mask.
    rx_mode: str = "rps"
    napi_sched: str = ""  # napi mode: the NAPI thread's scheduling (rxmode.NapiSched)
    # The user's own ports (testbed.ports: --gen-iface/--cap-iface), not a veth test bed capbench
    # built: nothing to steer or remove, and every trial reads and records the NIC (testbed.nic).
    ports: bool = False
    # Sensors on one stream (seed 004's tap): the capture veth is then the tap's input, and each
    # sensor i has its own namespace capbench-<id>-s<i> and veth pair cb<id>t<i> (in the capture
    # namespace, the tap's side) == cb<id>s<i> (the sensor's); sensor(i) is its view.
    sensors: int = 0
    # The tap's targets when the user wired them (a topology's [tap] clone_to); () : capbench's own.
    tap_to: tuple[str, ...] = ()

    def sensor(self, i: int, rx_cpu: int | None) -> Testbed:
        """Sensor i (1-based) as a test bed of its own: the tap's veth cb<id>t<i> is its sender,
        cb<id>s<i> its capture interface, `rx_cpu` its receive CPU."""
        return dataclasses.replace(self, gen_ns=self.cap_ns, gen_if=f"cb{self.id}t{i}",
                                   cap_ns=f"capbench-{self.id}-s{i}", cap_if=f"cb{self.id}s{i}",
                                   gen_mac=f"02:cb:00:00:{i:02x}:01", cap_mac=f"02:cb:00:00:{i:02x}:02",
                                   rx_cpu=rx_cpu, sensors=0)

    @property
    def tap_targets(self) -> tuple[str, ...]:
        """The tap's side of every sensor's veth pair, in sensor order."""
        if self.tap_to:
            return self.tap_to
        return tuple(f"cb{self.id}t{i}" for i in range(1, self.sensors + 1))

    @classmethod
    def named(cls, tb_id: str, rx_cpu: int | None = None) -> Testbed:
        return cls(
            id=tb_id,
            gen_ns=f"capbench-{tb_id}-gen",
            cap_ns=f"capbench-{tb_id}-cap",
            gen_if=f"cb{tb_id}g",
            cap_if=f"cb{tb_id}c",
            gen_mac=GEN_MAC,
            cap_mac=CAP_MAC,
            rx_cpu=rx_cpu,
        )


# --- owner bookkeeping -------------------------------------------------------


def owner_alive(state: dict) -> bool:
    return process_alive(state.get("owner_pid"), state.get("owner_start_ticks"))


def read_state(tb_id: str) -> dict | None:
    try:
        return next(json.loads(p.read_text()) for d in state_dirs() if (p := d / f"{tb_id}.json").exists())
    except (StopIteration, FileNotFoundError, json.JSONDecodeError):
        return None


def _write_state(tb: Testbed, owner_pid: int, purpose: str, host_settings: list[dict] = (), *,
                 kept: bool = False) -> None:
    d = state_dir()
    # Made if absent, and trusted only if this user alone can write it, as the registry beside it.
    for folder in (d,) if os.environ.get(STATE_DIR_ENV) else (d.parent, d):
        os.close(open_folder(folder, os.geteuid(), create=True))
    state = asdict(tb) | {
        "owner_pid": owner_pid,
        "owner_start_ticks": process_start_ticks(owner_pid),
        "purpose": purpose,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # The host settings it holds: what it found and set (put back through owners.HostSettings).
        "host_settings": list(host_settings),
        # Built complete to be kept for work by hand: only `testbed down ID` removes it.
        "kept": kept,
    }
    tmp = d / f".{tb.id}.json.tmp"
    tmp.write_text(json.dumps(state, indent=1) + "\n")
    tmp.replace(d / f"{tb.id}.json")


def _remove_state(tb_id: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (state_dir() / f"{tb_id}.json").unlink()


# --- create / destroy --------------------------------------------------------


def rps_mask(cpu: int) -> str:
    """The rps_cpus bitmap text selecting one CPU: 32-bit hex words joined by commas."""
    value = 1 << cpu
    words = []
    while True:
        words.append(f"{value & 0xFFFFFFFF:08x}")
        value >>= 32
        if not value:
            break
    return ",".join(reversed(words))


def set_rps(tb: Testbed, cpu: int | None, queues: int = 1) -> None:
    """Steer the capture veth's receive work to `cpu` (None: no RPS, the sender's CPU does it),
    on every receive queue."""
    mask = "0" if cpu is None else rps_mask(cpu)
    for q in range(queues):
        netns.write_file(tb.cap_ns, f"/sys/class/net/{tb.cap_if}/queues/rx-{q}/rps_cpus", mask)


def steer(tb: Testbed, rx_cpu: int | None) -> None:
    """Make `rx_cpu` the CPU of the capture side's receive work (a trial's Measurer gets the test
    bed with that rx_cpu).

    rps: the capture veth's RPS mask selects it. napi: RPS is off (with a mask, the NAPI
    thread would queue every frame to a backlog, even its own CPU's) and each trial pins
    the NAPI thread to it (rxmode.place). cpumap: RPS is off, and each trial's ring has its
    thread there (rxmode.place_ring)."""
    set_rps(tb, rx_cpu if tb.rx_mode == "rps" else None, veth_queues())


def veth_queues() -> int:
    """One queue pair per CPU. A frame XDP-redirected into a veth goes to the peer's
    receive queue of the sending CPU (CPU number modulo the queues): with one queue,
    generator threads on two CPUs would share one 256-frame ring and its NAPI, and the
    ring overflows; with a queue per CPU every sender has its own."""
    return max(1, min(len(cpu.online_cpus()), 64))


def wait_until_up(tb: Testbed, timeout_s: float = 5.0) -> None:
    """Wait until both veth ends are operationally up.

    The kernel turns a link's carrier change into its operational state in the
    link-watch work, which runs up to a second later; until then the capture
    side reads NO-CARRIER and a first trial would start on a half-ready link.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        states = [netns.operstate(tb.gen_if, tb.gen_ns), netns.operstate(tb.cap_if, tb.cap_ns)]
        if states == ["UP", "UP"]:
            return
        if time.monotonic() > deadline:
            raise RunError(f"the test bed's veth did not come up within {timeout_s:g} s "
                           f"({tb.gen_if}: {states[0]}, {tb.cap_if}: {states[1]})")
        time.sleep(0.05)


def holder(tb: Testbed) -> Holder:
    """The test bed as a holder of host settings: alive while this process runs or its namespaces exist."""
    return Holder.of_this_process(tb.id, (tb.gen_ns, tb.cap_ns))


def hold_backlog(tb: Testbed, packets: int | None, registry: HostSettings | None = None) -> None:
    """Hold net.core.netdev_max_backlog at exactly `packets` for test bed `tb` (a step's backlog
    knob), lower than the host's too; with None, at the value it had before this test bed first
    held it (a step that leaves it to the host, after one that set it), or not at all if it never
    did. Through the host-settings registry, as --backlog's: when the test bed is removed, however
    the run ends, the last holder puts the original back; a value another living run holds
    exactly is refused in one line (owners.HostSettings.hold). `registry`: this user's by default."""
    registry = HostSettings() if registry is None else registry
    if packets is None:
        entry = registry.held().get(host_sysctl.path(host_sysctl.BACKLOG))
        if entry is None or tb.id not in entry.get("holders", {}):
            return
        packets = int(entry["original"])
    registry.hold(holder(tb), host_sysctl.setting(host_sysctl.BACKLOG, packets, exact=True))


def create(rx_cpu: int | None = None, *, mtu: int = 1500, purpose: str = "run",
           backlog: int | None = None, tune: bool = False, rx_mode: str = rxmode.DEFAULT_RX_MODE,
           napi_sched: str | None = None, sensors: int = 0, keep: bool = False) -> Testbed:
    """Build a new test bed owned by this process; on failure remove what was built and raise.
    With `keep`, once it is complete its state says so: `destroy_stale` leaves it after this process
    ends (a half-built one is a leftover).

    SIGINT and SIGTERM are held back meanwhile: they are delivered when this returns (the
    caller's `try` that destroys the test bed must be open by then: see `testbed()`), or
    after what was built is removed. So a signal never leaves half a test bed.

    `purpose` is shown by `capbench testbed status` ("run", "testbed up", a test's name).
    `backlog` raises net.core.netdev_max_backlog to at least that many packets until
    the test bed is destroyed (see host_sysctl, owners). `rx_mode` and `napi_sched` (None: the
    mode's default, rxmode.default_sched): see rxmode.
    """
    rxmode.check_mode(rx_mode)
    rxmode.check_available(rx_mode)
    if not 0 <= sensors <= MAX_SENSORS:
        raise UsageError(f"{sensors} sensors: give 1 to {MAX_SENSORS}")
    sched = rxmode.NapiSched.parse(napi_sched or rxmode.default_sched(rx_mode)).text if rx_mode != "rps" else ""

    def named() -> Testbed:
        return dataclasses.replace(Testbed.named(secrets.token_hex(3), rx_cpu), backlog=backlog,
                                   rx_mode=rx_mode, napi_sched=sched, sensors=sensors)

    release = held_signals.hold()
    try:
        HostSettings().check()  # a registry it cannot trust stops the run before anything is built
        tb = named()
        while read_state(tb.id) is not None or tb.gen_ns in netns.list_netns():
            tb = named()
        # The state file comes first, so a crash half-way leaves something `down` can find.
        _write_state(tb, os.getpid(), purpose)
        try:
            for ns in (tb.gen_ns, tb.cap_ns):
                netns.add_netns(ns)
                for scope in ("all", "default"):
                    netns.set_sysctl(ns, f"net.ipv6.conf.{scope}.disable_ipv6", "1")
            _veth(tb, mtu)
            for i in range(1, sensors + 1):
                sensor = tb.sensor(i, rx_cpu)
                netns.add_netns(sensor.cap_ns)
                for scope in ("all", "default"):
                    netns.set_sysctl(sensor.cap_ns, f"net.ipv6.conf.{scope}.disable_ipv6", "1")
                _veth(sensor, mtu)
                steer(sensor, rx_cpu)
            steer(tb, rx_cpu)
            wanted = [host_sysctl.setting(host_sysctl.BACKLOG, backlog)] if backlog is not None else []
            if tune:
                wanted += hygiene.tuned_settings()
            records, registry, me = [], HostSettings(), holder(tb)
            for setting in wanted:
                # Each setting is in the registry before it is changed, so whatever happens
                # next, the last test bed holding it puts it back.
                record = registry.hold(me, setting)
                if record:
                    records.append(record)
                    _write_state(tb, os.getpid(), purpose, records)
            for bed in (tb, *(tb.sensor(i, rx_cpu) for i in range(1, sensors + 1))):
                wait_until_up(bed)
            if keep:
                _write_state(tb, os.getpid(), purpose, records, kept=True)
            # A signal that came meanwhile is raised here, where the test bed is still undone
            # below (unless the caller holds signals too: then in the caller's own `try`).
            release()
        except BaseException:
            destroy(tb.id)
            raise
    finally:
        release()
    return tb


def _veth(tb: Testbed, mtu: int) -> None:
    """The veth pair gen_if (in gen_ns) == cap_if (in cap_ns), one queue pair per CPU, up."""
    queues = str(veth_queues())
    netns.ip(
        "link", "add", tb.gen_if, "netns", tb.gen_ns, "address", tb.gen_mac, "mtu", str(mtu),
        "numtxqueues", queues, "numrxqueues", queues, "type", "veth",
        "peer", "name", tb.cap_if, "netns", tb.cap_ns, "address", tb.cap_mac, "mtu", str(mtu),
        "numtxqueues", queues, "numrxqueues", queues,
    )
    for ns, ifname in ((tb.gen_ns, tb.gen_if), (tb.cap_ns, tb.cap_if)):
        netns.ip("-n", ns, "link", "set", "dev", ifname, "up")


def destroy(tb_id: str) -> bool:
    """Remove a test bed's namespaces (with their veth and XDP programs) and its state file,
    and end its holds on host settings: each is put back when no other living test bed holds
    it (owners.HostSettings), so a setting another run still measures with stays.

    SIGINT and SIGTERM are held back meanwhile, so a second Ctrl-C cannot leave
    half a test bed behind; they are delivered when this returns. True if
    anything was removed.
    """
    tb = Testbed.named(tb_id)
    with held_signals.held():
        removed = False
        errors = []
        sensors = sorted(ns for ns in netns.list_netns() if (m := NS_RE.match(ns)) and m.group(1) == tb_id
                         and m.group(2).startswith("s"))
        for ns in (*sensors, tb.gen_ns, tb.cap_ns):
            try:
                removed |= netns.delete_netns(ns)
            except RunError as e:
                errors.append(str(e))
        if not errors:  # after the namespaces: a test bed still there keeps what it holds
            try:
                HostSettings().release(tb_id)
            except RunError as e:
                errors.append(str(e))
        if errors:
            raise RunError("; ".join(errors))
        state = read_state(tb_id)
        removed |= state is not None
        _remove_state(tb_id)
        return removed


@dataclass(frozen=True)
class TestbedInfo:
    """What `testbed status` shows about one test bed."""

    id: str
    namespaces: tuple[str, ...]
    state: dict | None

    @property
    def in_use(self) -> bool:
        return self.state is not None and owner_alive(self.state)

    @property
    def kept(self) -> bool:
        """Built complete by `testbed up` and still there: someone may be using it by hand."""
        return self.state is not None and bool(self.state.get("kept")) and bool(self.namespaces)


def others_in_use(own_id: str) -> tuple[str, ...]:
    """The ids of the other test beds a running process owns (from their state files, without
    `ip netns`): their traffic shares this host's per-CPU counters (softnet_stat)."""
    ids = []
    for tb_id in _state_ids():
        if tb_id != own_id:
            state = read_state(tb_id)
            if state is not None and owner_alive(state):
                ids.append(tb_id)
    return tuple(ids)


def _state_ids() -> list[str]:
    """The ids of the test beds with a state file (state_dirs), sorted."""
    return sorted({p.stem for d in state_dirs() if d.is_dir() for p in d.glob("*.json")
                   if re.fullmatch(r"[0-9a-f]{6}", p.stem)})


def list_testbeds() -> list[TestbedInfo]:
    """Every test bed that has a namespace or a state file."""
    ids: dict[str, list[str]] = {}
    for ns in netns.list_netns():
        m = NS_RE.match(ns)
        if m:
            ids.setdefault(m.group(1), []).append(ns)
    for tb_id in _state_ids():
        ids.setdefault(tb_id, [])
    return [TestbedInfo(i, tuple(sorted(ids[i])), read_state(i)) for i in sorted(ids)]


def destroy_stale() -> tuple[list[str], list[TestbedInfo]]:
    """Remove every test bed that a crashed run left (not owned by a running process, not kept);
    return (removed ids, kept)."""
    removed, kept = [], []
    for info in list_testbeds():
        if info.in_use or info.kept:
            kept.append(info)
        else:
            destroy(info.id)
            removed.append(info.id)
    return removed, kept


# --- guaranteed teardown -----------------------------------------------------


def _raise_terminated(signum, frame):  # noqa: ARG001 - signal handler signature
    raise Terminated(f"terminated by signal {signum}")


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """While active, SIGTERM raises Terminated in the main thread, so `finally` blocks run."""
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals are the main thread's business
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def testbed(rx_cpu: int | None = None, *, mtu: int = 1500, purpose: str = "run",
            backlog: int | None = None, tune: bool = False, rx_mode: str = rxmode.DEFAULT_RX_MODE,
            napi_sched: str | None = None, sensors: int = 0) -> Iterator[Testbed]:
    """A test bed for the duration of a `with` block, removed on exit, exceptions,
    KeyboardInterrupt and SIGTERM, whenever it comes (owners.owned)."""
    with sigterm_raises(), owned(lambda: create(rx_cpu, mtu=mtu, purpose=purpose, backlog=backlog, tune=tune,
                                                rx_mode=rx_mode, napi_sched=napi_sched, sensors=sensors),
                                 lambda tb: destroy(tb.id)) as tb:
        yield tb
