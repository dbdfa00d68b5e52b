"""--profile's analysis (capbench.profile): perf script's output read, samples grouped by the one
table (groups.toml), and the record's per-role figures, from real perf output of an afp-v3 trial at
64 B (fixtures/perf-script: `perf script -F comm,pid,tid,cpu,period,ip,sym,dso` of a perf record -g
of every CPU, trimmed to 169 samples)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capbench.profile import analysis, groups, perf_script
from capbench.profile.analysis import Role
from capbench.profile.perf_script import Frame, Sample
from capbench.trial.record import load_trial
from records import make_result

FIXTURE = Path(__file__).parent / "fixtures" / "perf-script" / "afp-v3-64.txt"
K = 0xFFFFFFFF81000000  # a kernel address
U = 0x401000  # a user-space one


def parsed() -> perf_script.Parsed:
    return perf_script.parse(FIXTURE.read_text().splitlines())


def sample(*frames: str, cpu: int = 1, pid: int = 100, comm: str = "x", user: tuple[str, ...] = ()) -> Sample:
    """A sample of kernel frames `frames` (leaf first) over user frames `user`."""
    return Sample(cpu=cpu, pid=pid, tid=pid, comm=comm, period=1_000_000,
                  frames=tuple(Frame(f, "[kernel.kallsyms]", True) for f in frames)
                  + tuple(Frame(f, "/usr/bin/app", False) for f in user))


def test_parse_reads_every_sample_of_real_perf_output():
    text = FIXTURE.read_text()
    p = parsed()
    headers = [line for line in text.splitlines() if line and line[0] not in " \t"]
    assert len(p.samples) == len(headers) == 169
    assert p.skipped_lines == 0
    napi = next(s for s in p.samples if any(f.symbol == "napi_threaded_poll" for f in s.frames))
    assert napi.frames[-1].symbol == "ret_from_fork_asm"  # leaf first, root last
    assert all(f.kernel for f in napi.frames)
    cap = [s for s in p.samples if s.comm == "capbench-cap"]
    assert cap and any(not f.kernel and f.symbol == "v3_ring_run" for s in cap for f in s.frames)
    # An object's name may hold parentheses: "/memfd:sealed-... (deleted)".
    assert any(f.dso.endswith("(deleted)") for s in p.samples for f in s.frames)
    assert {s.cpu for s in p.samples} == {0, 1}
    assert all(s.period == 1_000_000 for s in p.samples)


def test_parse_keeps_names_with_spaces_and_counts_what_it_cannot_read():
    text = ("Web Content 12/13 [000]    1000000 \n"
            "\tffffffff81000010 tpacket_rcv ([kernel.kallsyms])\n"
            "\t401000 operator new(unsigned long) (/usr/lib/libstdc++.so.6)\n"
            "\n"
            "not a sample line\n"
            "\tffffffff81000010 a frame with no sample ([kernel.kallsyms])\n"
            "ev\x1bil 5/5 [001]    1000000 \n"
            "\t401000 main\x07 (/tmp/a)\n")
    p = perf_script.parse(text.splitlines())
    assert [s.comm for s in p.samples] == ["Web Content", "ev?il"]
    assert p.samples[0].frames[1].symbol == "operator new(unsigned long)"
    assert p.samples[0].frames[0].kernel and not p.samples[0].frames[1].kernel
    assert p.samples[1].frames[0].name == "main? [a]"
    assert p.skipped_lines == 2


def test_group_table_is_complete_and_unambiguous():
    t = groups.table()
    names = t.names()
    assert len(names) == len(set(names))
    assert [g.kind for g in t.groups].count(groups.USER) == 1
    assert [g.kind for g in t.groups].count(groups.REST) == 1
    assert [g.kind for g in t.groups].count(groups.IDLE) == 1
    assert [g.kind for g in t.groups].count(groups.OTHERS) == 1
    assert all(re.fullmatch(r"#[0-9a-f]{6}", g.color) for g in t.groups)
    assert all(g.functions for g in t.groups if g.kind == "functions")
    assert len({g.color for g in t.groups}) == len(t.groups)


@pytest.mark.parametrize("frames,user,pid,group", [
    # a helper is charged to its caller: the spin lock of the page pool's recycling
    (("__pv_queued_spin_lock_slowpath", "_raw_spin_lock", "page_pool_put_unrefed_netmem", "napi_pp_put_page",
      "skb_release_data", "ip_rcv_core"), (), 9, "buffers"),
    (("__pi_memcpy", "skb_copy_bits", "tpacket_rcv", "__netif_receive_skb_core.constprop.0"), (), 9, "socket"),
    (("read_tsc", "ktime_get_real_ts64", "tpacket_rcv"), (), 9, "socket"),
    (("eth_type_trans", "veth_xdp_rcv_one"), (), 9, "stack"),
    (("bpf_prog_a8e3d8d508804e5d_cb_count", "veth_xdp_rcv_one"), (), 9, "bpf"),
    (("veth_xdp_rcv_bulk_skb.isra.0", "veth_poll"), (), 9, "driver"),
    # a name written out in full beats a glob: packet_poll is a wake-up though "socket" names packet_*
    (("_raw_spin_lock_irqsave", "packet_poll", "do_sys_poll"), (), 9, "wakeup"),
    # a system call no group names is the application's; kernel work nobody names is "other"
    (("posix_cpu_clock_get", "do_syscall_64"), ("clock_gettime", "main"), 9, "app"),
    ((), ("v3_ring_run",), 9, "app"),
    (("run_timer_softirq", "handle_softirqs"), (), 9, "other"),
    (("pv_native_safe_halt", "default_idle", "do_idle", "cpu_startup_entry"), (), 0, "idle"),
    # the same idle frames outside the idle task are no idle time
    (("pv_native_safe_halt", "default_idle"), (), 9, "other"),
])
def test_group_of_a_stack(frames, user, pid, group):
    s = sample(*frames, user=user, pid=pid)
    assert analysis.classify(s)[1] == group


def test_shares_say_where_the_sample_ran():
    assert analysis.classify(sample("tpacket_rcv", "veth_poll", "napi_threaded_poll"))[0] == "net_rx"
    assert analysis.classify(sample("veth_poll", "net_rx_action", "handle_softirqs", "do_idle", pid=0))[0] == "net_rx"
    assert analysis.classify(sample(user=("main",)))[0] == "user"
    assert analysis.classify(sample("pv_native_safe_halt", "do_idle", pid=0))[0] == "idle"
    assert analysis.classify(sample("do_syscall_64", user=("main",)))[0] == "kernel"


def test_base_name_drops_compiler_suffixes():
    assert groups.base_name("veth_xdp_rcv_bulk_skb.isra.0") == "veth_xdp_rcv_bulk_skb"
    assert groups.base_name("foo.constprop.0.isra.0") == "foo"
    assert groups.base_name("bar.cold") == "bar"
    assert groups.base_name("baz") == "baz"


def test_role_figures_of_real_samples():
    p = parsed()
    roles = {"generator": Role(cpus=(0,)), "receive": Role(cpus=(1,)),
             "counter": Role(cpus=(1,), pids=frozenset({21405}))}
    rec = analysis.profile_record(p.samples, roles, packets=1_000, period_ns=1_000_000, hz=1000.0, window_s=0.1,
                                  profiler_pid=None, facts={"tool": "perf"})
    rx, counter = rec["roles"]["receive"], rec["roles"]["counter"]
    on_cpu1 = [s for s in p.samples if s.cpu == 1]
    assert rx["samples"] == len(on_cpu1) and rx["cpus"] == [1] and rx["expected_samples"] == 100
    assert sum(rx["shares_pct"].values()) == pytest.approx(100, abs=0.01)
    assert sum(rx["groups_pct"].values()) == pytest.approx(100, abs=0.01)
    assert list(rx["groups_pct"]) == groups.table().names()
    idle = sum(1 for s in on_cpu1 if analysis.classify(s)[1] == "idle")
    assert rx["ns_per_packet"] == pytest.approx((len(on_cpu1) - idle) * 1_000_000 / 1_000)
    assert sum(rx["groups_ns_per_packet"].values()) == pytest.approx(rx["ns_per_packet"], rel=1e-6)
    # The NAPI thread's receive path and the packet socket's copy are on the receive CPU.
    assert rx["shares_pct"]["net_rx"] > 50
    assert "tpacket_rcv" in [name for name, _ in rx["top_total"]] or rx["groups_pct"]["socket"] > 0
    # The counter's role is its own process only, its read loop its top function.
    assert counter["processes"] and counter["expected_samples"] is None
    assert counter["samples"] == sum(1 for s in p.samples if s.pid == 21405)
    assert counter["top_self"][0][0] == "v3_ring_run [capbench-cap]"
    assert rec["unresolved_frames"] == sum(1 for s in p.samples for f in s.frames if f.symbol == "[unknown]") > 0
    assert rec["frames"] == sum(len(s.frames) for s in p.samples)


def test_no_packets_gives_no_time_per_packet():
    rec = analysis.profile_record([sample("veth_poll")], {"receive": Role(cpus=(1,))}, packets=0, period_ns=10,
                                  hz=100.0, window_s=1.0, profiler_pid=None, facts={})
    assert rec["roles"]["receive"]["ns_per_packet"] is None
    assert rec["roles"]["receive"]["groups_ns_per_packet"] == {}


def test_profiler_share_counts_perfs_own_samples():
    samples = [sample("veth_poll"), sample("perf_mmap__push", pid=77, comm="perf")]
    rec = analysis.profile_record(samples, {"receive": Role(cpus=(1,))}, packets=1, period_ns=10, hz=100.0,
                                  window_s=20e-9, profiler_pid=77, facts={})
    assert rec["roles"]["receive"]["profiler_pct"] == 50.0


def test_folded_stacks_hold_every_sample_root_first():
    p = parsed()
    roles = {"generator": Role(cpus=(0,)), "receive": Role(cpus=(1,)), "counter": Role(cpus=(1,), pids=frozenset())}
    stacks = analysis.folded(p.samples, roles)
    assert sum(stacks.values()) == len(p.samples)
    assert all(";" not in part for stack in stacks for part in stack.split(";")[0:1])
    roots = {stack.split(";")[0] for stack in stacks}
    assert roots == {"CPU 0 (generator)", "CPU 1 (receive, counter)"}
    napi = next(stack for stack in stacks if "napi_threaded_poll_[k]" in stack)
    frames = napi.split(";")
    assert frames.index("ret_from_fork_asm_[k]") < frames.index("napi_threaded_poll_[k]")  # root first


def test_folded_file_round_trip(tmp_path):
    stacks = {"CPU 1;a b;f_[k]": 3, "CPU 1;c;g": 1}
    path = tmp_path / "t.folded"
    analysis.write_folded(path, stacks)
    lines = path.read_text().splitlines()
    assert {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in lines} == stacks


def test_a_profiled_record_loads():
    p = parsed()
    prof = analysis.profile_record(p.samples, {"receive": Role(cpus=(1,)), "counter": Role(cpus=(1,), pids=frozenset())},
                                   packets=0, period_ns=1_003_009, hz=997.0, window_s=2.0, profiler_pid=None,
                                   facts={"tool": "perf version 6.1", "warnings": [], "folded": "profiles/x.folded"})
    record = make_result(profile=prof).to_record()
    assert load_trial(record).profile == prof


def test_time_no_sample_fell_in_is_unsampled_beside_proc_stat():
    """A CPU role's shares are of the window's time: 10 samples of 1 ms in a 40 ms window leave
    75 % unsampled (this VM's halted idle vCPU takes no timer sample), and /proc/stat's idle and
    steal over the same window stand beside it."""
    from capbench.testbed.cpu import CpuJiffies
    before = {1: CpuJiffies(user=0, nice=0, system=0, idle=0, iowait=0, irq=0, softirq=0, steal=0)}
    after = {1: CpuJiffies(user=0, nice=0, system=1, idle=2, iowait=0, irq=0, softirq=0, steal=1)}
    samples = [sample("tpacket_rcv", "veth_poll", "napi_threaded_poll")] * 10
    rec = analysis.profile_record(samples, {"receive": Role(cpus=(1,))}, packets=100, period_ns=1_000_000,
                                  hz=1000.0, window_s=0.04, profiler_pid=None, facts={}, proc_stat=(before, after))
    rx = rec["roles"]["receive"]
    assert rx["expected_samples"] == 40
    assert rx["shares_pct"] == {"net_rx": 25.0, "kernel": 0.0, "user": 0.0, "others": 0.0, "idle": 0.0,
                                "unsampled": 75.0}
    assert rx["groups_pct"]["socket"] == 25.0 and rx["groups_pct"]["unsampled"] == 75.0
    assert rx["stat_idle_pct"] == 50.0 and rx["stat_steal_pct"] == 25.0
    assert rx["ns_per_packet"] == 100_000.0  # 10 ms of busy time over 100 packets
    assert "unsampled" not in rx["groups_ns_per_packet"]


NAPI, COUNTER, GEN = 50, 60, 70  # the trial's NAPI thread and processes in the samples below
RX_WORK = ("tpacket_rcv", "veth_poll", "napi_threaded_poll")


def busy_host_samples() -> list[Sample]:
    """CPU 1 of a trial (its NAPI thread, its counter in a spin) on a busy host, in time order: a
    Python process and another test bed's NAPI thread run there too, and the counter is preempted
    by the Python process at the end of a system call (the scheduler's tick, which the sampler's
    aliases with, hands the CPU over)."""
    spin = sample("posix_cpu_clock_get", "do_syscall_64", pid=COUNTER, comm="capbench-cap", user=("v3_ring_run",))
    preempted = sample("__schedule", "schedule", "exit_to_user_mode_loop", "do_syscall_64", pid=COUNTER,
                       comm="capbench-cap", user=("v3_ring_run",))
    python = sample(pid=900, comm="python", user=("_PyEval_EvalFrameDefault",))
    return [sample(*RX_WORK, pid=NAPI, comm="napi/cbaaaaaa-8"), spin, spin, preempted, python, python,
            sample(*RX_WORK, pid=901, comm="napi/cbbbbbbb-8"),  # another test bed's receive thread
            sample("veth_poll", "net_rx_action", "handle_softirqs", "irq_exit_rcu", pid=COUNTER,
                   comm="capbench-cap"),  # another bed's softirq receive work, in the counter's time
            spin, sample("pv_native_safe_halt", "do_idle", pid=0, comm="swapper/1")]


def test_others_work_is_one_named_group_not_the_trials():
    """Issue 28: with other work on the host a profile charged it to the trial (a receive CPU read
    4,496 ns/packet when the trial's own threads took 1,534). Now only the trial's processes and
    receive threads make the figures; the rest is "others", with who it was."""
    owners = analysis.Owners(pids=frozenset({COUNTER, GEN}), rx_threads=frozenset({NAPI}))
    roles = {"receive": Role(cpus=(1,)), "counter": Role(cpus=(1,), pids=frozenset({COUNTER}))}
    rec = analysis.profile_record(busy_host_samples(), roles, packets=10, period_ns=1_000_000, hz=1000.0,
                                  window_s=0.01, profiler_pid=None, facts={}, owners=owners)
    rx, counter = rec["roles"]["receive"], rec["roles"]["counter"]
    # The CPU's 10 periods: the NAPI thread's 1, the counter's 3, idle 1; others' 5 (python twice,
    # the other bed's thread and softirq, the preempted period handed to python).
    assert rx["groups_pct"]["others"] == 50.0 and rx["shares_pct"]["others"] == 50.0
    assert rx["shares_pct"]["net_rx"] == 10.0 and rx["groups_pct"]["socket"] == 10.0
    assert rx["busy_ms"] == 4.0 and rx["ns_per_packet"] == 400_000.0  # the trial's own 4 ms, not 9 ms
    assert "others" not in rx["groups_ns_per_packet"]
    assert rx["others_ms"] == 5.0
    assert dict(map(tuple, rx["others_top_processes"])) == {"python": 30.0, "napi/cbbbbbbb-8": 10.0,
                                                            analysis.FOREIGN_NET_RX: 10.0}
    # The counter's figures are its own time: its spin, all of it the application's; the time the
    # Python process and the softirq took from it is its others_ms.
    assert counter["samples"] == 3 and counter["groups_pct"]["app"] == 100.0
    assert counter["others_ms"] == 2.0
    assert dict(map(tuple, counter["others_top_processes"])) == {"python": 33.333, analysis.FOREIGN_NET_RX: 33.333}
    assert rec["owners"] == {"processes": 2, "rx_threads": [NAPI]}


def test_without_receive_threads_softirq_receive_work_is_the_trials():
    """RPS (no receive thread of the trial's): NET_RX softirq work in whatever task runs is the
    trial's receive work; another device's NAPI thread still is not."""
    owners = analysis.Owners(pids=frozenset({COUNTER}))
    samples = [sample("veth_poll", "net_rx_action", "handle_softirqs", pid=900, comm="python"),
               sample("veth_poll", "net_rx_action", "handle_softirqs", "do_idle", pid=0, comm="swapper/1"),
               sample(*RX_WORK, pid=901, comm="napi/cbbbbbbb-8")]
    kinds, takers = analysis.classify_all(samples, owners)
    assert [k[1] for k in kinds] == ["driver", "driver", "others"] and takers == {2: "napi/cbbbbbbb-8"}


def test_a_task_that_waits_by_itself_is_not_preempted():
    """schedule() from its own poll is the counter's wait, even when another task runs next."""
    owners = analysis.Owners(pids=frozenset({COUNTER}))
    wait = sample("__schedule", "schedule", "do_sys_poll", "do_syscall_64", pid=COUNTER, user=("poll",))
    kinds, _ = analysis.classify_all([wait, sample(pid=900, user=("main",))], owners)
    assert [k[1] for k in kinds] == ["wakeup", "others"]
    assert analysis.classify_all([wait], None)[0] == [analysis.classify(wait)]


def test_folded_stacks_put_others_work_under_one_frame():
    owners = analysis.Owners(pids=frozenset({COUNTER, GEN}), rx_threads=frozenset({NAPI}))
    stacks = analysis.folded(busy_host_samples(), {"receive": Role(cpus=(1,))}, owners)
    others = {k: n for k, n in stacks.items() if k.split(";")[1] == analysis.OTHERS_FRAME}
    assert sum(others.values()) == 5 and sum(stacks.values()) == len(busy_host_samples())
    assert "CPU 1 (receive);napi/cbaaaaaa-8;napi_threaded_poll_[k];veth_poll_[k];tpacket_rcv_[k]" in stacks
    assert f"CPU 1 (receive);{analysis.OTHERS_FRAME};napi/cbbbbbbb-8;napi_threaded_poll_[k];veth_poll_[k];" \
           f"tpacket_rcv_[k]" in stacks
