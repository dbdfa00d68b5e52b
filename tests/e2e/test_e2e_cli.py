"""The command line on a real machine: `capbench run`, the pass-through commands,
the test bed commands, interruption, and bad input to the C programs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from capbench.testbed import cgroups
from capbench.testbed import host_sysctl
from capbench.testbed import netns
from capbench.testbed import veth_pair as testbed
from capbench.testbed.procs import Child
from e2e_env import (decided_trials, xdp_engine_refusal, as_nobody_argv, assert_one_line_usage_error, assert_run_measured, capbench_cmd, capbench_env, capbench_namespaces, gen_required,
                     missing_prerequisite, run_capbench, run_in, start_run, xdp_attached)
from layer_rows import own_drops

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))


def program_pids(tb_id: str) -> list[int]:
    """Processes whose command line names the test bed's interfaces (capbench-gen/-cap/-xdpcount)."""
    out = subprocess.run(["pgrep", "-f", f"cb{tb_id}[gc]"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_for_programs(tb_id: str, timeout_s: float = 30.0) -> None:
    """Until a trial's programs run (after the host probe that comes before the first trial), then
    a second more: generator, counter and XDP counter all running."""
    deadline = time.monotonic() + timeout_s
    while not program_pids(tb_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert program_pids(tb_id), "the trial's programs should be running"
    time.sleep(1.0)


def assert_nothing_left(tb_id: str) -> None:
    assert not {f"capbench-{tb_id}-gen", f"capbench-{tb_id}-cap"} & capbench_namespaces()
    assert program_pids(tb_id) == []
    assert testbed.read_state(tb_id) is None
    assert not netns.link_exists(f"cb{tb_id}g") and not netns.link_exists(f"cb{tb_id}c")
    assert xdp_attached() == []


def run_dir(tmp_path: Path) -> Path:
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    return d


def test_run_writes_trials_and_metadata(tmp_path):
    p = run_capbench("run", "--backends", "afp-v3,pcap", "--sizes", "64,1518", "--duration", "1",
                     "--results", str(tmp_path), "--probe", "1")
    assert_run_measured(p)
    # The host probe before the first trial: one line, and run.json's host_probe on the run's CPUs.
    assert [x for x in p.stderr.splitlines() if x.startswith("host probe (1")], p.stderr
    # The headers as rich folds them in a table wider than the terminal (Captured [pps /\nGbps]).
    assert all(h in p.stdout for h in ("Frame [B]", "Offered [pps]", "Sent [pps]", "Captured [pps", "Loss [%]")), p.stdout
    d = run_dir(tmp_path)
    records = decided_trials(d / "trials.jsonl")
    assert [(r["backend"], r["frame_len"]) for r in records] == [("afp-v3", 64), ("afp-v3", 1518),
                                                                ("pcap", 64), ("pcap", 1518)]
    for r in records:
        assert r["sent"] > 0 and r["received"] > 0
        assert r["sent"] - r["received"] == r["lost"]
        assert r["lost"] == r["link_drops"] + r["backlog_drops"] + own_drops(r["layers"]) + r["unexplained"]
        assert (r["gen_cpu"], r["cap_cpu"], r["kernel_rx_cpu"]) == (0, 1, 1)
        assert r["offered_pps"] == pytest.approx(1e9 / ((r["frame_len"] + 20) * 8))
    meta = json.loads((d / "run.json").read_text())
    # run.json counts every trial recorded, the disturbed runs that were run again too.
    assert meta["status"] == "complete" and meta["trials"] == len((d / "trials.jsonl").read_text().splitlines()) >= 4
    for key in ("kernel", "cpu_model", "cores", "capbench_version", "git_commit", "settings"):
        assert meta[key] not in (None, ""), key
    assert meta["settings"]["campaign"]["matrices"][0]["sizes"] == [64, 1518]
    assert meta["placements"]["A:A"]["cap_cpu"] == 1
    assert meta["host_probe"]["seconds"] == pytest.approx(1, abs=0.3) and set(meta["host_probe"]["cpus"]) == {"0", "1"}
    report = run_capbench("report", str(d))
    assert report.returncode == 0 and "afp-v3" in report.stdout


def backlog() -> int:
    return int(host_sysctl.read(host_sysctl.BACKLOG))


def above_backlog() -> int:
    """A backlog above the current one (another test bed of this module may have raised it)."""
    return backlog() + 4321


def test_run_with_a_profile(tmp_path):
    p = run_capbench("run", "--backends", "afp-v3", "--sizes", "imix:seed", "--rate", "10%", "--duration", "1",
                     "--results", str(tmp_path))
    assert_run_measured(p)
    assert "imix:seed" in p.stdout
    (r,) = decided_trials(run_dir(tmp_path) / "trials.jsonl")
    assert r["size"] == "imix:seed" and r["frame_len"] == round(r["mean_frame_len"])
    assert 430 < r["mean_frame_len"] < 520  # 475 B on average; a 1 s trial draws ~25,000 frames
    assert r["offered_pps"] == pytest.approx(1e8 / ((475.02 + 20) * 8), rel=0.01)
    assert r["raw"]["gen"]["sent_lengths"].keys() == {"64", "570", "594", "1518"}


def test_run_passes_the_generators_bad_input_on(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("64,-1\n")
    p = run_capbench("run", "--backends", "afp-v3", "--sizes", f"dist:{bad}", "--duration", "1",
                     "--results", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "bad.csv line 1" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("signum, status, trials_done", [(signal.SIGINT, 130, 0), (signal.SIGTERM, 143, 1)])
def test_stopping_a_run_leaves_nothing_behind(tmp_path, signum, status, trials_done):
    before, raised = backlog(), above_backlog()
    proc, tb_id = start_run(tmp_path, "--sizes", "64,128,256", "--duration", "3", "--backlog", str(raised))
    deadline = time.monotonic() + 30
    while trials_done and time.monotonic() < deadline:  # until the first trial is on disk
        done = [d / "trials.jsonl" for d in tmp_path.iterdir() if d.is_dir()]
        if done and done[0].exists() and done[0].read_text().count("\n") >= trials_done:
            break
        time.sleep(0.05)
    wait_for_programs(tb_id)
    assert backlog() == raised
    os.killpg(proc.pid, signum)  # what a Ctrl-C at the terminal does: the whole foreground group
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert_nothing_left(tb_id)
    assert backlog() == before
    if not trials_done:  # stopped before a trial ended: no results, no results folder
        assert list(tmp_path.iterdir()) == []
        return
    meta = json.loads((run_dir(tmp_path) / "run.json").read_text())
    assert meta["status"] == "interrupted" and meta["trials"] == trials_done
    assert meta["testbed"]["backlog"] == raised
    assert meta["sysctls"][host_sysctl.BACKLOG] == str(before)


def test_killed_run_leftovers_are_removed_by_testbed_down(tmp_path):
    before, raised = backlog(), above_backlog()
    proc, tb_id = start_run(tmp_path, "--sizes", "64", "--duration", "3", "--backlog", str(raised))
    wait_for_programs(tb_id)
    os.killpg(proc.pid, signal.SIGKILL)  # no chance to clean up
    proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while program_pids(tb_id) and time.monotonic() < deadline:  # children die with their parent
        time.sleep(0.05)
    assert program_pids(tb_id) == []
    assert f"capbench-{tb_id}-cap" in capbench_namespaces()
    status = run_capbench("testbed", "status")
    assert tb_id in status.stdout and "no running owner" in status.stdout
    assert backlog() == raised  # nobody put it back yet
    p = run_capbench("testbed", "down")
    assert p.returncode == 0 and f"removed test bed {tb_id}" in p.stdout
    assert_nothing_left(tb_id)
    assert backlog() == before


@pytest.mark.parametrize("mode, mask", [("rps", 0b10), ("napi", 0)])
def test_testbed_up_status_down(mode, mask):
    p = run_capbench("testbed", "up", "--rx-cpu", "1", "--rx-mode", mode)
    assert p.returncode == 0, p.stderr
    tb_id = re.search(r"test bed ([0-9a-f]{6})", p.stdout).group(1)
    try:
        tb = testbed.Testbed.named(tb_id)
        assert netns.operstate(tb.cap_if, tb.cap_ns) == "UP"
        # rps steers the receive work with the RPS mask; napi turns RPS off (its NAPI thread,
        # pinned per trial, does the work) and says how to place the thread by hand.
        rps = netns.sh(tb.cap_ns, f"cat /sys/class/net/{tb.cap_if}/queues/rx-0/rps_cpus").strip()
        assert int(rps.replace(",", ""), 16) == mask
        assert ("NAPI thread" in p.stdout) is (mode == "napi")
        assert tb_id in run_capbench("testbed", "status").stdout
    finally:
        p = run_capbench("testbed", "down", tb_id)
    assert p.returncode == 0, p.stderr
    assert_nothing_left(tb_id)


def test_testbed_down_refuses_a_bed_in_use_unless_forced():
    with testbed.testbed(purpose="pytest down") as tb:  # owned by this (running) process
        _down_in_use(tb)
    assert_nothing_left(tb.id)


def _down_in_use(tb: testbed.Testbed) -> None:
    p = run_capbench("testbed", "down", tb.id)
    assert_one_line_usage_error(p, "capbench", f"test bed {tb.id} is in use by pid {os.getpid()}", "--force")
    assert f"capbench-{tb.id}-cap" in capbench_namespaces() and testbed.read_state(tb.id) is not None
    p = run_capbench("testbed", "down", "--force")
    assert_one_line_usage_error(p, "capbench", "--force needs the ID")
    p = run_capbench("testbed", "down", "--force", tb.id)
    assert p.returncode == 0 and f"removed test bed {tb.id}" in p.stdout, p.stderr
    assert not {f"capbench-{tb.id}-gen", f"capbench-{tb.id}-cap"} & capbench_namespaces()
    assert testbed.read_state(tb.id) is None
    # The running owner's programs are its own to end: its cgroups stay, and it starts more.
    group = cgroups.run_group()
    assert group is None or group.path.is_dir()
    assert Child("true", ["true"]).wait(10) == 0


def test_gen_and_capture_pass_through(tb):
    """`capbench capture` and `capbench gen` by hand in the test bed's namespaces. --count counts
    every frame: the 5,000 and the generator's 3 trailer frames."""
    cap = subprocess.Popen(capbench_cmd("capture", "--netns", tb.cap_ns, "--iface", tb.cap_if, "--backend",
                                        "afp-v3", "--count", "5003", "--duration", "20"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=capbench_env())
    assert cap.stdout is not None
    assert json.loads(cap.stdout.readline())["type"] == "ready"
    # afpacket needs no XDP program on the peer, unlike the xdp engine.
    gen = run_capbench("gen", "--netns", tb.gen_ns, "--iface", tb.gen_if, "--engine", "afpacket",
                       "--rate", "50kpps", "--count", "5000", "--dst-mac", tb.dst_mac, timeout=60)
    out, err = cap.communicate(timeout=30)
    assert gen.returncode == 0, gen.stderr
    gsum = json.loads(gen.stdout.splitlines()[-1])
    assert gsum["type"] == "summary" and gsum["sent"] == 5000 and gsum["engine"] == "afpacket"
    assert cap.returncode == 0, err
    csum = [json.loads(line) for line in out.splitlines()][-1]
    assert csum["type"] == "summary"
    assert (csum["received"], csum["lost"], csum["duplicates"], csum["reordered"]) == (5000, 0, 0, 0)
    assert csum["packets"] == 5003 and csum["trailer"]["seen"] == 3 and csum["foreign"] == 0
    assert csum["kernel_drops"] == 0 and csum["kernel"]["freeze_q"] == 0


def test_capture_stops_on_ctrl_c_with_its_summary(tb):
    proc = subprocess.Popen(capbench_cmd("capture", "--netns", tb.cap_ns, "--iface", tb.cap_if),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=capbench_env(),
                            start_new_session=True)
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["type"] == "ready"
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    lines = [json.loads(line) for line in out.splitlines()]
    assert [m["type"] for m in lines if m["type"] == "summary"] == ["summary"], err
    assert lines[-1]["backend"] == "pcap" and lines[-1]["received"] == 0


# --- bad input to the C programs: one line, exit status 2, nothing on stdout -----------------------


@pytest.mark.parametrize("args, words", [
    (["--count", "0"], ["--count"]),
    (["--size", "63"], ["63", "64"]),
    (["--size", "1519"], ["1519", "MTU 1500"]),
    (["--rate", "2Mpps"], ["wire rate", "--link"]),
    (["--rate", "1.1g"], ["wire rate"]),
    (["--link", "3g"], ["--link"]),
    (["--engine", "dpdk"], ["dpdk", "xdp"]),
    (["--cpu", "99"], ["--cpu"]),
    (["--bogus"], ["--bogus"]),
])
def test_generator_bad_input(tb, binaries, args, words):
    p = run_in(tb.gen_ns, [str(binaries.gen), "--iface", tb.gen_if, *gen_required(tb), *args])
    assert_one_line_usage_error(p, "capbench-gen", *words)


@pytest.mark.parametrize("args, words", [
    (["--backend", "pfring"], ["pfring", "pcap", "raw", "afp-v2", "afp-v3", "fanout"]),
    (["--count", "0"], ["--count"]),
    (["--app-load", "heavy"], ["heavy"]),
    (["--backend", "afp-v3", "--block-size", "5000"], ["--block-size", "power of two"]),
    # packet_set_ring() takes the block size as an int: 2G would be refused at open.
    (["--backend", "afp-v3", "--block-size", "2G", "--block-count", "1"], ["--block-size", "up to 1G"]),
    (["--backend", "afp-v3", "--pcap-api", "next"], ["--backend pcap"]),
    (["--pcap-api", "loop"], ["loop"]),
    (["--backend", "raw", "--batch", "0"], ["--batch", "1..1024"]),
    (["--backend", "raw", "--batch", "many"], ["--batch", "many"]),
    (["--backend", "afp-v3", "--batch", "8"], ["--batch", "raw"]),
    (["--backend", "afp-v3", "--buffer-size", "4M"], ["--buffer-size", "pcap and raw"]),
    (["--backend", "afp-v2", "--frame-size", "100"], ["--frame-size", "multiple of 16"]),
    (["--backend", "afp-v2", "--frame-size", "2050"], ["--frame-size", "multiple of 16"]),
    (["--backend", "afp-v2", "--frame-count", "0"], ["--frame-count"]),
    (["--backend", "afp-v2", "--frame-count", "5000000"], ["--frame-count", "4194304"]),
    (["--backend", "afp-v3", "--frame-size", "2048"], ["--frame-size", "afp-v2"]),
    (["--backend", "afp-v2", "--frame-size", "64k", "--frame-count", "4194304"], ["refuses a ring"]),
    (["--backend", "fanout", "--fanout-mode", "spray"], ["spray", "hash, lb, cpu, qm or rollover"]),
    (["--backend", "fanout", "--workers", "0"], ["--workers", "give 1..256"]),
    (["--backend", "fanout", "--workers", "999"], ["--workers", "give 1..256"]),
    (["--backend", "fanout", "--worker-cpus", "0,0"], ["--worker-cpus", "distinct"]),
    (["--backend", "fanout", "--worker-cpus", "0-9999"], ["--worker-cpus"]),
    (["--backend", "fanout", "--worker-cpus", "one"], ["--worker-cpus", "one"]),
    (["--backend", "fanout", "--workers", "2", "--worker-cpus", "0"], ["one CPU per worker"]),
    (["--backend", "afp-v3", "--workers", "2"], ["--workers", "--backend fanout"]),
    (["--backend", "pcap", "--fanout-mode", "lb"], ["--fanout-mode", "--backend fanout"]),
    (["--buffer-size", "2G"], ["--buffer-size '2G'", "up to 2147483647 (2G - 1)"]),
    (["--backend", "raw", "--buffer-size", "2147483648"], ["--buffer-size", "up to 2147483647"]),
])
def test_counter_bad_input(tb, binaries, args, words):
    p = run_in(tb.cap_ns, [str(binaries.cap), "--iface", tb.cap_if, *args])
    assert_one_line_usage_error(p, "capbench-cap", *words)


@pytest.mark.parametrize("prog", ["gen", "cap", "xdpcount"])
def test_unknown_interface(binaries, prog):
    required = ["--rate", "1kpps", "--dst-mac", "02:cb:00:00:00:01"] if prog == "gen" else []  # else it asks for them
    p = run_in(None, [str(getattr(binaries, prog)), "--iface", "nosuchif0", *required])
    assert_one_line_usage_error(p, "capbench-" + prog, "nosuchif0", "ip link")


# What each program needs, by its options: the capabilities it checks, in the order its line names them.
PROGRAM_CAPS = [
    pytest.param("gen", [], ("net_admin", "net_raw", "bpf"), id="gen-xdp-engine"),
    pytest.param("gen", ["--engine", "afpacket"], ("net_raw",), id="gen-afpacket"),
    pytest.param("cap", ["--backend", "afp-v3"], ("net_raw",), id="cap-afp-v3"),
    pytest.param("cap", ["--backend", "xdp"], ("net_admin", "net_raw", "perfmon", "bpf"), id="cap-xdp"),
    # A UMEM beyond RLIMIT_MEMLOCK also needs ipc_lock: the kernel decides (test_e2e_exit_status).
    pytest.param("cap", ["--backend", "afxdp", "--frame-count", "2048"], ("net_admin", "net_raw", "perfmon", "bpf"),
                 id="cap-afxdp"),
    pytest.param("xdpcount", [], ("net_admin", "perfmon", "bpf"), id="xdpcount"),
]


# Each program with options that make it end by itself once it got past the capability check.
UNTIL_DONE = {"gen": ["--iface", "lo", "--count", "1", "--rate", "1000", "--dst-mac", "02:cb:00:00:00:01"], "cap": ["--iface", "lo", "--duration", "1"],
              "xdpcount": ["--iface", "lo", "--mode", "generic"]}


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop root")
@pytest.mark.parametrize("prog, args, caps", PROGRAM_CAPS)
def test_programs_without_capabilities_name_them(binaries, prog, args, caps):
    # The user id does not matter, the capabilities do: nobody without any is told every one it needs
    # and how to grant them.
    p = run_in(None, [str(getattr(binaries, prog)), *UNTIL_DONE[prog], *args], as_nobody=True)
    names = ", ".join(f"CAP_{c.upper()}" for c in caps)
    assert_one_line_usage_error(p, "capbench-" + prog, f"needs {names}:", "run as root",
                                f"--ambient-caps {','.join('+' + c for c in caps)}")


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop root")
@pytest.mark.parametrize("prog, args, caps", PROGRAM_CAPS)
def test_programs_with_capabilities_but_one(binaries, prog, args, caps):
    # Granted all it needs but one: that one is named. Granted all, it works as nobody.
    argv = [str(getattr(binaries, prog)), *UNTIL_DONE[prog], *args]
    for missing in caps:
        p = run_in(None, argv, as_nobody=True, caps=tuple(c for c in caps if c != missing))
        assert_one_line_usage_error(p, "capbench-" + prog, f"needs CAP_{missing.upper()}:")
    if prog != "xdpcount":
        p = run_in(None, argv, as_nobody=True, caps=caps)
        if prog == "gen" and "--engine" not in args and xdp_engine_refusal() is not None:
            # Past the capability check, a kernel that refuses live frames is the line it gets.
            assert_one_line_usage_error(p, "capbench-gen", "live frames", "use --engine xdploop or afpacket")
            return
        assert p.returncode == 0 and '"type":"summary"' in p.stdout, p.stderr
        return
    with subprocess.Popen(as_nobody_argv(argv, caps), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL) as proc:
        ready = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert '"type":"ready"' in ready and proc.returncode == 0 and '"type":"summary"' in out, err


def half_the_memory() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2


GIB = 1 << 30


def rings_above_half_the_memory() -> list:
    """Ring options whose rings, all sockets together, just exceed half of this machine's memory."""
    half = half_the_memory()
    return [
        pytest.param(["--backend", "afp-v2", "--frame-size", "64k", "--frame-count", str(half // 65536 + 16)],
                     ["refuses a ring of", "frames of 65536 B", "--frame-count, --frame-size"], id="afp-v2"),
        pytest.param(["--backend", "afp-v3", "--block-size", "1G", "--block-count", str(half // GIB + 1)],
                     ["refuses a ring of", "blocks of 1073741824 B", "--block-count, --block-size"], id="afp-v3"),
        # Each worker's ring is below the limit; the four together are not.
        pytest.param(["--backend", "fanout", "--workers", "4", "--block-size", "1G",
                      "--block-count", str(half // (4 * GIB) + 1)],
                     ["refuses 4 rings (one per worker)", "fewer --workers"], id="fanout"),
        pytest.param(["--backend", "afxdp", "--frame-count", "1048576", "--queue", f"0-{half // (2 * GIB)}"],
                     ["UMEMs (one per queue) of 1048576 frames of 2048 B", "--frame-count", "fewer --queue"],
                     id="afxdp"),
    ]


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop root")
@pytest.mark.parametrize("args, words", rings_above_half_the_memory())
def test_counter_refuses_rings_above_half_the_memory(binaries, args, words):
    # The check comes with the other options, before the capability check: run as nobody, so that
    # were it ever missing, the counter would stop at "needs CAP_NET_RAW" instead of mapping GiBs.
    p = run_in(None, [str(binaries.cap), "--iface", "lo", *args], as_nobody=True)
    limit = f"more than {half_the_memory() / GIB:.1f} GiB (half of this machine's memory)"
    assert_one_line_usage_error(p, "capbench-cap", *words, limit)


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv (util-linux) is needed to drop root")
@pytest.mark.parametrize("args", [["run"], ["testbed", "up"], ["testbed", "down"]])
def test_capbench_not_root(args):
    env = capbench_env()
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        *capbench_cmd(*args)], capture_output=True, text=True, env=env, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines() == [p.stderr.strip()] and "needs CAP_" in p.stderr
    assert "Traceback" not in p.stderr
