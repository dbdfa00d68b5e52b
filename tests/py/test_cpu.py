import os
import threading

import pytest
from capbench.testbed import cpu

PROC_STAT = """\
cpu  3189 0 4023 1919224 676 0 56 1525 0 0
cpu0 1099 0 2435 959733 12 0 8 814 0 0
cpu1 2090 0 1587 959490 664 5 48 711 0 0
intr 123 0 0
ctxt 456
"""


def test_parse_proc_stat():
    cpus = cpu.parse_proc_stat(PROC_STAT)
    assert set(cpus) == {0, 1}
    assert cpus[1].irq == 5 and cpus[1].softirq == 48 and cpus[1].kernel_rx == 53
    assert cpus[0].total == 1099 + 2435 + 959733 + 12 + 8 + 814


def test_kernel_rx_pct():
    before = cpu.parse_proc_stat("cpu1 100 0 100 700 0 0 100 0 0 0\n")
    after = cpu.parse_proc_stat("cpu1 110 0 110 730 0 10 140 0 0 0\n")
    # 100 jiffies went by; 10 irq + 40 softirq of them.
    assert cpu.kernel_rx_pct(before, after, 1) == pytest.approx(50.0)
    assert cpu.kernel_rx_pct(before, before, 1) == 0.0


def test_pid_stat_with_awkward_command_name():
    text = "1234 (my prog) (x)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 5000 0 0\n"
    assert cpu.parse_pid_stat_ticks(text) == 325


def test_own_process_ticks_grow():
    t0 = cpu.read_pid_ticks(os.getpid())
    x = 0
    for i in range(3_000_000):
        x += i
    assert cpu.read_pid_ticks(os.getpid()) >= t0
    assert cpu.process_cpu_pct(0, cpu.CLK_TCK, 2.0) == pytest.approx(50.0)
    assert cpu.process_cpu_pct(0, 10, 0) == 0.0


SOFTNET = """\
0000000e 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
000006da 0000089f 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000
"""


def test_softnet_drops_use_the_cpu_column():
    # The second line is CPU 2 (CPU 1 offline): the 13th column says so.
    assert cpu.parse_softnet_drops(SOFTNET) == {0: 3, 2: 0x89F}


def test_softnet_drops_old_format_uses_line_index():
    assert cpu.parse_softnet_drops("00000001 00000010 0\n00000001 00000020 0\n") == {0: 16, 1: 32}


def test_counter_delta_sums_and_wraps():
    before = {0: 10, 1: 0xFFFFFFF0}
    after = {0: 15, 1: 0x10}
    assert cpu.counter_delta(before, after) == 5 + 0x20
    assert cpu.counter_delta(before, after, cpus={0}) == 5


def test_real_proc_files_parse():
    assert cpu.read_proc_stat()
    assert cpu.read_softnet_drops()
    assert cpu.online_cpus()


def test_parse_cpu_list():
    assert cpu.parse_cpu_list("0-3,6,8-9\n") == {0, 1, 2, 3, 6, 8, 9}
    assert cpu.parse_cpu_list("0") == {0}


def test_the_cpu_a_thread_last_ran_on():
    # Field 39 of a stat line, after a command name with spaces and parentheses.
    line = "42 (a b) c) S " + " ".join(str(i) for i in range(4, 39)) + " 7 0 0"
    assert cpu.parse_pid_stat_last_cpu(line) == 7
    # This process's threads, other than the main one, are on CPUs this process may use.
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        seen = cpu.read_thread_cpus(os.getpid())
    finally:
        stop.set()
        t.join()
    assert seen and set(seen) <= set(range(os.cpu_count()))
    assert cpu.read_thread_cpus(2 ** 22 + 1) == ()  # no such process


def test_ksoftirqd_pid(tmp_path):
    for pid, comm in ((10, "ksoftirqd/0"), (24, "ksoftirqd/1"), (99, "ksoftirqd/10"), (7, "bash")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(comm + "\n")
    (tmp_path / "self").mkdir()
    assert cpu.ksoftirqd_pid(1, tmp_path) == 24
    assert cpu.ksoftirqd_pid(10, tmp_path) == 99
    assert cpu.ksoftirqd_pid(5, tmp_path) is None
    assert cpu.ksoftirqd_pid(0) is not None  # this machine's
