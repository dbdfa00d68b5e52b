"""Checks made before anything is built, each failing with one line that names the fix."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import re
import resource
import shutil
import socket
from collections.abc import Callable

from capbench import declared
from capbench.testbed.cpu import usable_cpus
from capbench.errors import UsageError
from capbench.options import option_value
from capbench.rates import DEFAULT_MTU_B, link_name
from capbench.testbed.veth_pair import DST_MAC

LIVE_FRAMES_KERNEL = (5, 18)  # BPF_F_TEST_XDP_LIVE_FRAMES
XDP_LINK_KERNEL = (5, 9)  # XDP programs attached through a bpf_link (afxdp, xdp backends)
AF_XDP = 44
_BPF_SYSCALL = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "ppc64le": 361, "s390x": 351,
                "i686": 357, "armv7l": 386}
_BPF_MAP_CREATE = 0
_BPF_MAP_TYPE_ARRAY = 2
_PACKET_VERSION = 10
_TPACKET_V2 = 1
_TPACKET_V3 = 2
_ETH_P_ALL = 0x0003
_PACKET_FANOUT = 18
_PACKET_FANOUT_LB = 1
_PACKET_FANOUT_FLAG_UNIQUEID = 0x2000


# The capabilities capbench asks for (linux/capability.h numbers) and what it needs each for. The
# kernel checks these, not the user id: root has them all; another user can be granted them
# (docs/capabilities.md). Measured as user nobody on Linux 6.18, each left out in turn.
CAPABILITIES: dict[str, tuple[int, str]] = {
    "dac_override": (1, "to write root's /run/netns, /run/capbench, sysctls and sysfs files"),
    "net_admin": (12, "veth pairs, XDP programs, entering the namespaces and their mounts"),
    "net_raw": (13, "packet sockets"),
    "ipc_lock": (14, "an AF_XDP UMEM beyond the locked-memory limit, or ulimit -l unlimited"),
    "sys_admin": (21, "network namespaces: ip netns add and exec"),
    "sys_nice": (23, "placing the NAPI kernel thread on the receive CPU"),
    "perfmon": (38, "the XDP programs' packet access, perf"),
    "bpf": (39, "BPF programs and maps"),
}
# What a command that builds a test bed and measures on it needs; a run measuring an AF_XDP backend
# may also need ipc_lock (run_caps).
GEN_CAPS = ("net_admin", "net_raw", "bpf")  # capbench-gen's xdp engine (gen_engine_caps); afpacket needs less
RUN_CAPS = GEN_CAPS + ("perfmon", "sys_admin", "dac_override", "sys_nice")
# Building or removing a test bed (testbed up/down), entering a namespace (gen/capture --netns).
TESTBED_CAPS = ("net_admin", "sys_admin", "dac_override")
NETNS_CAPS = ("net_admin", "sys_admin")  # setns() into a named namespace fails without net_admin (measured)


def effective_caps(status: str = "/proc/self/status") -> int:
    """This process's effective capability set (CapEff), as a mask of capability numbers."""
    with open(status) as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def missing_caps(needs: tuple[str, ...] | list[str], effective: int | None = None) -> list[str]:
    have = effective_caps() if effective is None else effective
    return [c for c in CAPABILITIES if c in needs and not have >> CAPABILITIES[c][0] & 1]


def run_caps(c) -> tuple[str, ...]:
    """What campaign `c` needs: RUN_CAPS, and ipc_lock when one of its backends opens an AF_XDP
    socket and the locked-memory limit is not unlimited (its UMEM, tens of MiB, is locked memory:
    without ipc_lock the kernel charges it to RLIMIT_MEMLOCK, 8 MiB by default)."""
    backends = {b for m in c.matrices for b in m.backends}
    af_xdp = any("af_xdp" in declared.backend(b).needs for b in backends if b in declared.backend_names())
    limited = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0] != resource.RLIM_INFINITY
    return RUN_CAPS + (("ipc_lock",) if af_xdp and limited else ())


def require_caps(what: str, needs: tuple[str, ...] | list[str], effective: int | None = None) -> None:
    """UsageError naming the capabilities of `needs` this process lacks, what for, and how to grant them."""
    missing = missing_caps(needs, effective)
    if not missing:
        return
    named = ", ".join(f"CAP_{c.upper()} ({CAPABILITIES[c][1]})" for c in missing)
    grant = ",".join(f"+{c}" for c in needs)
    raise UsageError(f"{what} needs {named}: run it as root, or grant it these as ambient capabilities: "
                     f"sudo setpriv --reuid=$(id -u) --regid=$(id -g) --init-groups --inh-caps {grant} "
                     f"--ambient-caps {grant} {what} ... (docs/capabilities.md)")


def require_ip() -> None:
    if shutil.which("ip") is None:
        raise UsageError("the `ip` command is missing: apt-get install iproute2")


def kernel_version(release: str | None = None) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", release or os.uname().release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def bpf_syscall_error() -> str | None:
    """None if the bpf() syscall can create a map here, else why not."""
    nr = _BPF_SYSCALL.get(platform.machine())
    if nr is None:
        return None  # unknown architecture: let the programs find out
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 32)()  # zero-filled union bpf_attr, larger than the map-create part
    attr[0], attr[1], attr[2], attr[3] = _BPF_MAP_TYPE_ARRAY, 4, 4, 1
    fd = libc.syscall(nr, _BPF_MAP_CREATE, ctypes.byref(attr), ctypes.sizeof(attr))
    if fd >= 0:
        os.close(fd)
        return None
    err = ctypes.get_errno()
    return f"{errno.errorcode.get(err, err)} ({os.strerror(err)})"


def bpffs_supported(path: str = "/proc/filesystems") -> bool:
    try:
        with open(path) as f:
            return any(line.split()[-1:] == ["bpf"] for line in f)
    except OSError:
        return False


def check_engine(engine: str) -> None:
    """The generator engine's kernel features, as it declares them (needs): BPF_PROG_RUN live
    frames for xdp. Every engine needs bpf() too: capbench-xdpcount counts what arrives."""
    gen = declared.gen()
    if "live_frames" in gen.engine(engine).needs and kernel_version() < LIVE_FRAMES_KERNEL:
        others = [e.name for e in gen.engines if "live_frames" not in e.needs]
        raise UsageError(
            f"the {engine} engine needs BPF_PROG_RUN live frames (Linux >= {LIVE_FRAMES_KERNEL[0]}."
            f"{LIVE_FRAMES_KERNEL[1]}), this kernel is {os.uname().release}: use --engine {' or '.join(others)} "
            f"or a newer kernel"
        )
    check_bpf()


# capbench-gen's options that ask the kernel about an engine and send nothing (`--check --probe`),
# after the program and before `--engine NAME`.
PROBE_ARGS = ("--check", "--probe", "--mtu", str(DEFAULT_MTU_B), "--rate", "1kpps", "--dst-mac", DST_MAC,
              "--duration", "0")


def engine_refusal(gen: str, engine: str) -> str | None:
    """Whether this kernel runs the generator's `engine`, as capbench-gen finds out by asking it
    (PROBE_ARGS): None when it does, else its one line (the xdp engine's BPF_PROG_RUN with live
    frames is missing before Linux 5.18, and some kernels forbid it). An engine with nothing to
    ask answers None."""
    return program_refusal([gen, *PROBE_ARGS, "--engine", engine])


def engine_here(refusal: Callable[[str], str | None], engine: str, asked: bool,
                shared_cpu: str | None = None) -> tuple[str, str | None]:
    """The generator engine a run uses on the generator's kernel, which `refusal(engine)` asks
    (engine_refusal here, remote_side.engine_refusal on a host), and a note when it is not
    `engine`. An engine `asked` for (--engine, a campaign's engine key) is refused in one line if
    the kernel does not run it. The default, when the kernel does not run it, gives way to the
    first engine in declared order that runs there (the xdp engine to xdploop, then afpacket, a
    packet socket away on any kernel), and the note says why: every record names the engine that
    sent. Where a part of the trial shares the generator's CPU (`shared_cpu` says how), an engine
    that sends from that CPU's softirq (declared.Engine.sends_from) is passed over: its loop keeps
    the CPU busy, paced or not, and the work beside it would run on what the loop leaves."""
    why = refusal(engine)
    if why is None:
        return engine, None
    if asked:
        raise UsageError(f"--engine {engine}: {why}")
    passed = []
    for other in declared.gen().engine_names:
        if other == engine or refusal(other) is not None:
            continue
        if shared_cpu is not None and declared.gen().engine(other).sends_from == "softirq":
            passed.append(other)
            continue
        note = f"sending with the {other} engine: {why.split(': use ')[0]}"
        if passed:
            note += (f"; not with the {' or '.join(passed)} engine, which sends from the generator CPU's "
                     f"softirq and keeps it busy: {shared_cpu}")
        return other, note
    raise UsageError(why)


def bpf_refusal(err: str) -> str:
    """Why the bpf() syscall failed, and the fix: EPERM is a process without CAP_BPF (and the
    CAP_NET_ADMIN and CAP_PERFMON that attaching and reading XDP programs take), else the kernel."""
    if "EPERM" in err:
        return (f"the bpf() syscall is refused here: {err}: run as root, or grant CAP_BPF, CAP_NET_ADMIN and "
                f"CAP_PERFMON (docs/capabilities.md)")
    return f"the bpf() syscall fails here: {err}: use a kernel built with CONFIG_BPF_SYSCALL"


def check_bpf() -> None:
    """The bpf() syscall works and the kernel knows bpffs (XDP counters need both)."""
    err = bpf_syscall_error()
    if err:
        raise UsageError(bpf_refusal(err))
    if not bpffs_supported():
        raise UsageError("this kernel has no bpf filesystem (bpffs): use a kernel built with CONFIG_BPF_SYSCALL")


def check_cpus(**cpus: int | None) -> None:
    """Each named CPU (gen_cpu=0, ...) exists, is online and is allowed to this process."""
    usable = usable_cpus()
    for name, cpu in cpus.items():
        if cpu is None:
            continue
        if cpu not in usable:
            flag = "--" + name.replace("_", "-")
            raise UsageError(
                f"{flag} {cpu}: no such CPU here (usable CPUs: {', '.join(map(str, usable))}): "
                f"choose one of them with {flag}"
            )


def backend_status(name: str) -> tuple[bool, str]:
    """(works here, why or why not) for a capture backend: the checks of the requirements its
    declaration names (capabilities.needs), in NEED_CHECKS order. The first that fails says why
    not; when all pass, their findings together (a finding another covers left out)."""
    if name not in declared.backend_names():
        return False, "unknown backend"
    backend = declared.backend(name)
    if backend.absent:
        return False, backend.absent
    unknown = [need for need in backend.needs if need not in NEED_CHECKS]
    if unknown:
        return False, f"it needs {', '.join(unknown)}, which this capbench cannot check: rebuild with make"
    found: list[tuple[str, str]] = []
    for need, check in NEED_CHECKS.items():
        if need in backend.needs:
            ok, why = check()
            if not ok:
                return False, why
            found.append((need, why))
    covered = {c for need, _ in found for c in COVERS.get(need, ())}
    whys = [why for need, why in found if need not in covered]
    if backend.kernel_counter:
        whys.append("counts and drops in the driver (the ceiling, not a capture)")
    if backend.polls:
        whys.append("its workers poll: each keeps its CPU busy whatever the traffic")
    return True, "; ".join(whys) or "nothing to check"


def _library(name: str, package: str) -> tuple[bool, str]:
    lib = ctypes.util.find_library(name)
    return (True, lib) if lib is not None else (False, f"lib{name} not found: apt-get install {package}")


def _libpcap_status() -> tuple[bool, str]:
    return _library("pcap", "libpcap0.8")


def _libxdp_status() -> tuple[bool, str]:
    return _library("xdp", "libxdp1 (and libxdp-dev to build)")


def _libdpdk_status() -> tuple[bool, str]:
    return _library("rte_eal", "dpdk")


def _xdp_link_status() -> tuple[bool, str]:
    """XDP programs attached through a bpf_link (kernel >= 5.9) and a working bpf() syscall.
    Zero-copy depends on the interface's driver, so it is named (af_xdp) but not checked: veth
    (the test bed) has none."""
    have = kernel_version()
    if have < XDP_LINK_KERNEL:
        return False, (f"kernel {os.uname().release} cannot attach XDP programs through a bpf_link "
                       f"(Linux >= {XDP_LINK_KERNEL[0]}.{XDP_LINK_KERNEL[1]})")
    err = bpf_syscall_error()
    if err:
        return False, bpf_refusal(err)
    return True, "XDP programs load and attach"


def _af_xdp_status() -> tuple[bool, str]:
    try:
        socket.socket(AF_XDP, socket.SOCK_RAW, 0).close()
    except PermissionError:
        return False, "AF_XDP sockets need CAP_NET_RAW: run as root or grant it (docs/capabilities.md)"
    except OSError as e:
        if e.errno == errno.EAFNOSUPPORT:
            return False, "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)"
        return False, f"cannot create an AF_XDP socket: {e.strerror}"
    return True, "AF_XDP socket creatable; copy mode on the veth test bed (veth has no zero-copy: --xdp-bind " \
                 "zerocopy fails there)"


def _packet_socket_status(*, tpacket: int | None = None) -> tuple[bool, str]:
    """Whether an AF_PACKET socket opens here and takes PACKET_VERSION `tpacket` (TPACKET_V2/V3)."""
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(_ETH_P_ALL))
    except PermissionError:
        return False, "AF_PACKET sockets need CAP_NET_RAW: run as root or grant it (docs/capabilities.md)"
    except OSError as e:
        return False, f"cannot create an AF_PACKET socket: {e.strerror}"
    with s:
        if tpacket is not None:
            name = f"TPACKET_V{tpacket + 1}"
            try:
                s.setsockopt(263, _PACKET_VERSION, tpacket)  # SOL_PACKET
            except OSError as e:
                return False, f"{name} not supported: {e.strerror}"
            return True, f"AF_PACKET socket with {name} creatable"
    return True, "AF_PACKET socket creatable"


def _fanout_status() -> tuple[bool, str]:
    """Whether a packet socket bound to lo can create a PACKET_FANOUT group (with a kernel-chosen id)."""
    try:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(_ETH_P_ALL)) as s:
            s.bind(("lo", _ETH_P_ALL))
            s.setsockopt(263, _PACKET_FANOUT, (_PACKET_FANOUT_LB | _PACKET_FANOUT_FLAG_UNIQUEID) << 16)
    except OSError as e:
        return False, f"PACKET_FANOUT groups not supported: {e.strerror}"
    return True, "AF_PACKET sockets with TPACKET_V3 in a PACKET_FANOUT group creatable"


# One check per requirement a backend can declare (capabilities.needs), in the order they run:
# libraries first, then what needs capabilities (so an unprivileged run names a missing library).
NEED_CHECKS: dict[str, Callable[[], tuple[bool, str]]] = {
    "libpcap": _libpcap_status,
    "libxdp": _libxdp_status,
    "libdpdk": _libdpdk_status,
    "packet_socket": _packet_socket_status,
    "tpacket_v2": lambda: _packet_socket_status(tpacket=_TPACKET_V2),
    "tpacket_v3": lambda: _packet_socket_status(tpacket=_TPACKET_V3),
    "fanout": _fanout_status,
    "xdp_link": _xdp_link_status,
    "af_xdp": _af_xdp_status,
}
# A finding that another one says already (an AF_PACKET socket with TPACKET_V3 is an AF_PACKET
# socket): left out of the "works here" line.
COVERS = {"tpacket_v2": ("packet_socket",), "tpacket_v3": ("packet_socket",),
          "fanout": ("packet_socket", "tpacket_v3"), "af_xdp": ("xdp_link",)}


def program_refusal(argv: list[str]) -> str | None:
    """Run a capbench program's `--check` command line (it sends and opens nothing): None when
    it accepts the options, else the last line it wrote, without the program's name."""
    import subprocess  # noqa: PLC0415 - only the checks start a program

    return refusal_of(subprocess.run(argv, capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL))


def refusal_of(p) -> str | None:
    """None when a program's check (a CompletedProcess) passed, else the last line it wrote,
    without the program's name."""
    if p.returncode == 0:
        return None
    why = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
    _name, sep, rest = why.partition(": ")
    return rest if why.startswith("capbench-") and sep else why


def check_profiles(c, gen: str, mtu: int = DEFAULT_MTU_B) -> None:
    """Every frame-length profile of campaign `c` (imix:, random:, dist:, trace:) as its
    trials will send it (campaign.check lets only a method that takes profiles have them), checked by the generator itself (`capbench-gen --check`,
    which sends nothing): its frames fit the test bed's MTU, a file reads, and the rate is
    within the link's wire rate for the profile's mean frame. Fixed lengths are checked in
    Python (campaign.check); the generator owns the profiles' rules."""
    profiles = sorted({s for m in c.matrices for s in m.sizes if isinstance(s, str)})
    for profile in profiles:
        # capbench-gen wants a destination and a length as its trials give them (gen_argv); a check of
        # the profile takes the test bed's MAC, and no time bound (--duration 0): each trial has its own.
        why = program_refusal([gen, "--check", "--mtu", str(mtu), "--size", profile, "--rate", c.rate,
                               "--link", link_name(c.link_bps), "--engine", c.engine, "--dst-mac", DST_MAC,
                               "--duration", "0"])
        if why is not None:
            raise UsageError(f"--sizes {profile}: {why}")


def check_backend_args(c, cap: str) -> None:
    """Every backend's --backend-args, with each ring size of the campaign, checked by the
    counter itself (`capbench-cap --check`, which opens nothing): an unknown option, a bad
    value or a ring too large for this machine is one line before anything is built."""
    import shlex  # noqa: PLC0415

    for m in c.matrices:
        for backend in m.backends:
            absent = backend in declared.backend_names() and declared.backend(backend).absent
            if absent:
                raise UsageError(f"--backends {backend}: {absent}")
    for m in c.matrices:
        for backend, args in m.backend_args:
            if backend not in m.backends:
                continue  # another matrix's (campaign.check: some matrix measures it)
            words = shlex.split(args)
            if "--write" in words or any(w.startswith("--write=") for w in words):
                if max(m.procs) > 1:
                    raise UsageError(f"--backend-args for {backend}: --write with --procs {max(m.procs)} would have "
                                     f"every process write the same file: capture with one process to write it")
            if declared.backend(backend).option("--xdp-bind") and option_value(words, "--xdp-bind") == "zerocopy":
                # capbench run measures on its veth test bed, and veth's XDP has no zero-copy
                # AF_XDP (no ndo_xsk_wakeup/XSK pool support): the bind would fail at open.
                raise UsageError(f"--backend-args for {backend}: --xdp-bind zerocopy cannot work on capbench run's "
                                 f"veth test bed (veth has no zero-copy AF_XDP): use --xdp-bind copy or leave it out")
    # Each backend's options as its steps give them: --ring's, --backend-args and its knobs' (--vary).
    combos = sorted({(s.backend, s.ring, s.backend_args, s.knob_args, s.config) for s in c.steps()
                     if s.backend in declared.backend_names() and (s.backend_args or s.knob_args)})
    for backend, ring, args, knob_args, config in combos:
        ring_args = declared.ring_args(backend, ring)
        why = program_refusal([cap, "--check", "--backend", backend, *ring_args, *shlex.split(args), *knob_args])
        if why is not None:
            raise UsageError(f"{f'--vary {config}' if knob_args else '--backend-args'} for {backend}: {why}")

