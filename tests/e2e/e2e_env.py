"""Helpers of the end-to-end tests: running capbench, and looking for what a run left behind."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from capbench import declared
from capbench.methods.measurer import superseded
from capbench.trial.record import TrialResult
from capbench.testbed import netns, preflight
from capbench.testbed import rxmode
from capbench.testbed import veth_pair as testbed

from host_interference import until_undisturbed

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"


def missing_prerequisite() -> str | None:
    if os.geteuid() != 0:
        return "end-to-end tests need root (network namespaces, veth, XDP): run `sudo make test`"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is missing: apt-get install iproute2"
    return None


@functools.cache
def engine_refusal(engine: str) -> str | None:
    """Why this kernel does not run capbench-gen's `engine`, as the generator's probe says (the xdp
    engine's BPF_PROG_RUN with live frames is missing before Linux 5.18 and forbidden by some kernels,
    as a sandbox's); None where it runs it."""
    from capbench.binaries import find_program  # noqa: PLC0415 - after the build

    return preflight.engine_refusal(str(find_program("capbench-gen")), engine)


def xdp_engine_refusal() -> str | None:
    """Why this kernel does not run the xdp engine (live frames). Tests of that engine skip with it."""
    return engine_refusal("xdp")


def engines() -> list[str]:
    """Every engine capbench-gen declares, in its order: tests parametrized over them skip the ones
    this kernel refuses (conftest)."""
    return list(declared.gen().engine_names)


def gen_engine(shared_cpu: bool = False) -> str:
    """The engine capbench run picks here without --engine (preflight.engine_here): the first
    declared one the kernel runs (xdp, else xdploop, else afpacket); with `shared_cpu` (a generator
    thread on a CPU that capture work shares), the first of them that does not send from softirq."""
    shared = "a test's generator thread shares a CPU with capture work" if shared_cpu else None
    return preflight.engine_here(engine_refusal, declared.gen().default_engine, asked=False, shared_cpu=shared)[0]


def with_engine(gen_args: list[str]) -> list[str]:
    """capbench-gen's options with the engine that runs here, unless they name one (or --replay,
    whose engine capbench-gen picks)."""
    if "--engine" in gen_args or "-e" in gen_args or "--replay" in gen_args:
        return gen_args
    return [*gen_args, "--engine", gen_engine()]


def skip_without_engine(engine: str) -> None:
    """Skip a test of `engine` itself on a kernel that does not run it."""
    import pytest  # noqa: PLC0415

    if engine_refusal(engine) is not None:
        pytest.skip(f"capbench-gen's {engine} engine: {engine_refusal(engine)}")


def skip_without_xdp_engine() -> None:
    """Skip a test of the xdp engine itself on a kernel that does not run it."""
    skip_without_engine("xdp")


def xdp_frames_here() -> bool:
    """Whether the engine picked here sends XDP frames (the xdp or the xdploop engine: 1 GbE at 64 B,
    a veth ring's xdp_xmit_errors), as it declares (refusals "lost"), not from a socket."""
    return declared.gen().engine(gen_engine()).refusals == "lost"


def skip_without_xdp_frames() -> None:
    """Skip a test that needs a generator of XDP frames (1 GbE at 64 B, overloading a program, a
    veth ring's xdp_xmit_errors) where the engine picked here sends from a socket."""
    import pytest  # noqa: PLC0415

    if not xdp_frames_here():
        pytest.skip(f"no engine of XDP frames runs here: {xdp_engine_refusal()}; "
                    f"{engine_refusal('xdploop')}")


def capbench_cmd(*args: str) -> list[str]:
    """`capbench ARGS`; a `run` without --probe gets `--probe 0`: the host probe's 2 s before the first
    trial would add minutes to the suite, and the tests of the probe give it (test_e2e_cli, test_e2e_witness)."""
    probe = ["--probe", "0"] if args[:1] == ("run",) and "--probe" not in args and "--help" not in args else []
    return [sys.executable, "-m", "capbench", *args, *probe]


def capbench_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    env.pop("CAPBENCH_BUILD_DIR", None)
    return env


def interrupted_capbench(*args: str, when: Callable[[], bool], wait_s: float = 120,
                         after_s: float = 0.0) -> tuple[int, str, str]:
    """`capbench ARGS` stopped with Ctrl-C (SIGINT to its process group, as a terminal sends it)
    once `when()` holds (checked every 0.1 s, at most `wait_s`) and `after_s` more have passed:
    (exit status, stdout, stderr). Fails if it ends or `when` never holds first; killed if it does
    not end within 60 s of the signal."""
    proc = subprocess.Popen(capbench_cmd(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=capbench_env(), stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + wait_s
        while not when():
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                out, err = proc.communicate()
                raise AssertionError(f"capbench {' '.join(args)}: not interrupted (exit {proc.returncode}): {err[-2000:]}")
            time.sleep(0.1)
        time.sleep(after_s)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def run_capbench(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(capbench_cmd(*args), capture_output=True, text=True, env=capbench_env(),
                          timeout=timeout, stdin=subprocess.DEVNULL)


def start_run(results: Path, *args: str) -> tuple[subprocess.Popen, str]:
    """Start `capbench run --results RESULTS ARGS` in a session of its own; return it and its test
    bed id once it has one (AssertionError if it ends without)."""
    proc = subprocess.Popen(capbench_cmd("run", "--results", str(results), *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=capbench_env(), start_new_session=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.match(r"test bed ([0-9a-f]{6}):", line)
        if m:
            return proc, m.group(1)
    proc.wait()
    raise AssertionError(f"capbench run printed no test bed line (exit {proc.returncode})")


def assert_run_measured(p: subprocess.CompletedProcess) -> None:
    """`capbench run` ended well: 0; 3 when every trial was a lower bound (the generator fell short
    at 100 % of the wire rate after a vCPU stall and nothing was lost); 4 when it measured but the
    host interfered (a trial stayed disturbed after its repetitions); each of which it says."""
    assert p.returncode in (0, 3, 4), p.stderr
    if p.returncode == 3:
        assert "lower bound" in p.stdout + p.stderr, (p.stdout, p.stderr)
    if p.returncode == 4:
        assert "the host interfered" in p.stdout + p.stderr, (p.stdout, p.stderr)


def assert_ended_measured(proc: subprocess.Popen, out: str | None, err: str | None) -> None:
    """assert_run_measured for a `capbench run` started with Popen, from what it printed."""
    assert_run_measured(subprocess.CompletedProcess(proc.args, proc.returncode, out or "", err or ""))


def decided_trials(path: Path) -> list[dict]:
    """The records of a trials.jsonl that its methods decided on: without the runs the host
    disturbed that were run again (methods.measurer.superseded; each is recorded, `attempt`)."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if not superseded(TrialResult.from_record(r))]


def capbench_namespaces() -> set[str]:
    return {ns for ns in netns.list_netns() if ns.startswith("capbench-")}


def left_behind(before: set[str]) -> set[str]:
    """The capbench namespaces that appeared since `before` and that no running process owns: what
    a run that has ended left. Another capbench running beside the tests (its test bed's state file
    names its live owner, written before its first namespace) is not this test's to judge."""
    live = {ns for info in testbed.list_testbeds() if info.in_use for ns in info.namespaces}
    return capbench_namespaces() - before - live


def xdp_attached(ns: str | None = None) -> list[str]:
    """Interfaces (in `ns`, or capbench's own namespace) that have an XDP program attached."""
    out = netns.ip(*(["-n", ns] if ns else []), "-o", "link", "show")
    # `2: cb1a2b3cc@if2: <...> mtu 1500 xdp qdisc ...`: the name without the veth's @peer
    return [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if " xdp" in line]


# Not one of capbench's needs: it lets a user other than root read the Python interpreter and the
# venv wherever this machine keeps them (under /root here). It bypasses only read and search
# permission, so every write capbench makes still needs CAP_DAC_OVERRIDE.
READ_INTERPRETER = ("dac_read_search",)


def as_user_argv(uid: int, gid: int, argv: list[str], caps: tuple[str, ...] = ()) -> list[str]:
    """`argv` run as user `uid` (group `gid`), with the capabilities `caps` (net_raw, bpf, ...) and no
    others: inherited and ambient, so that they survive exec as a granted user's would."""
    granted = ",".join(f"+{c}" for c in caps)
    keep = [f"--inh-caps=-all,{granted}", f"--ambient-caps={granted}"] if caps else []
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *keep, *argv]


@contextlib.contextmanager
def second_user(prefix: str) -> Iterator[pwd.struct_passwd]:
    """A real second user made for a test (PREFIX and random hex: a test's own prefix, so a leftover
    says whose it is), with a home of its own; removed with it whatever happens."""
    name = prefix + secrets.token_hex(4)
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True, capture_output=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", "--remove", name], capture_output=True)


# The kernel's rescues from links and FIFOs another user planted in a sticky folder (protected_regular
# stops O_CREAT of a file there that another user owns).
LINK_PROTECTIONS = ("fs.protected_symlinks", "fs.protected_fifos", "fs.protected_regular")


@contextlib.contextmanager
def unprotected_links() -> Iterator[None]:
    """LINK_PROTECTIONS at 0, as on a host that leaves them so (as this machine does): what a test
    then sees stopped is stopped by capbench, not by the kernel. Put back after."""
    paths = {key: Path("/proc/sys", key.replace(".", "/")) for key in LINK_PROTECTIONS}
    before = {key: path.read_text().strip() for key, path in paths.items()}
    try:
        for key, path in paths.items():
            if before[key] != "0":
                path.write_text("0\n")
        yield
    finally:
        for key, path in paths.items():
            path.write_text(before[key] + "\n")


def as_nobody_argv(argv: list[str], caps: tuple[str, ...] = ()) -> list[str]:
    """`argv` run as user nobody with `caps` (as_user_argv)."""
    return as_user_argv(65534, 65534, argv, caps)


def run_in(ns: str | None, argv: list[str], *, as_nobody: bool = False,
           caps: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    if as_nobody:
        argv = as_nobody_argv(argv, caps)
    return subprocess.run(netns.exec_argv(ns, argv), capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


def assert_one_line_usage_error(p: subprocess.CompletedProcess, prog: str, *words: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(prog + ": "), p.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert p.stdout == ""


def run_stream(binaries, tb, gen_args: list[str], *, backend: str = "afp-v3", settle_s: float = 0.3,
               cap_args: tuple[str, ...] = ()) -> tuple[dict, dict, dict]:
    """Send with capbench-gen `gen_args` through the test bed, capbench-xdpcount and
    capbench-cap (on CPU 1) on the capture side; (generator, counter, xdpcount) summaries.
    A stream the host spoiled is sent again (host_interference)."""
    return until_undisturbed(lambda _: _stream_once(binaries, tb, gen_args, backend, settle_s, cap_args),
                             " ".join(gen_args), stream_interference)


def stream_interference(summaries: tuple[dict, dict, dict]) -> str | None:
    """Why the host spoiled a stream, by the programs' own counters: the generator fell behind
    its schedule, or the counter lost frames that never reached the capture veth's XDP hook
    (xdpcount's count: they were dropped in the veth's ring) or that the cpumap ring dropped
    (xdpcount's ring_drops: its thread did not run), while its socket dropped none."""
    gen, cap, xdp = summaries
    why = []
    if 0 < gen.get("offered_share", 1.0) < 0.999:
        why.append(f"the generator sent {gen['offered_share']:.2%} of the load (largest lag "
                   f"{gen.get('max_lag_ns', 0) / 1e6:.1f} ms)")
    lost = cap.get("lost", 0)
    in_ring = gen.get("sent", 0) - xdp.get("capbench", 0) + xdp.get("ring_drops", 0)
    if lost and lost == in_ring and not cap.get("kernel_drops"):
        why.append(f"{lost:,} frames lost in the receive ring, before the capture socket, none in the socket")
    return "; ".join(why) or None


def gen_required(tb) -> list[str]:
    """What capbench-gen requires (docs/programs.md), a rate and a destination, to put before a test's
    own options: of an option given twice, the last holds."""
    return ["--rate", "1kpps", "--dst-mac", tb.dst_mac]


def _stream_once(binaries, tb, gen_args, backend, settle_s, cap_args) -> tuple[dict, dict, dict]:
    import time

    from capbench.testbed.procs import ChildSet

    # As a trial of a backend without XDP of its own does (Measurer.xdpcount_argv): on the cpumap
    # test bed the frames wait in the cpumap ring of the default depth, whose thread runs on the
    # receive CPU; on the napi bed in the veth's 256-frame ring, its NAPI thread there.
    ring = rxmode.ring_args(tb.rx_mode, rxmode.DEFAULT_RX_RING, tb.rx_cpu)
    with ChildSet() as kids:
        xdp = kids.start("capbench-xdpcount", [str(binaries.xdpcount), "--iface", tb.cap_if, *ring],
                         netns_name=tb.cap_ns)
        ready = xdp.wait_for("ready", 5)
        cap = kids.start("capbench-cap", [str(binaries.cap), "--iface", tb.cap_if, "--backend", backend,
                                          "--cpu", "1", *cap_args], netns_name=tb.cap_ns)
        cap.wait_for("ready", 5)
        rxmode.place_testbed(tb, tb.rx_mode, ready.get("ring_map_id"))
        gen = kids.start("capbench-gen", [str(binaries.gen), "--iface", tb.gen_if, "--trailer", "0",
                                          "--dst-mac", tb.dst_mac, *with_engine(gen_args)],
                         netns_name=tb.gen_ns)
        gen.wait(30)
        time.sleep(settle_s)  # let the rings drain
        kids.stop_all()
        return gen.summary(), cap.summary(), xdp.summary()
