"""The receive models' bad input and the NAPI thread lookup, without a kernel to ask."""

from __future__ import annotations

import pytest
from capbench.testbed import rxmode
from capbench.errors import UsageError


@pytest.mark.parametrize("text, policy, prio", [("other", "other", 0), ("fifo", "fifo", 50), ("fifo:1", "fifo", 1),
                                                ("fifo:99", "fifo", 99)])
def test_napi_sched_parses_the_policies(text, policy, prio):
    s = rxmode.NapiSched.parse(text)
    assert (s.policy, s.priority) == (policy, prio)
    assert rxmode.NapiSched.parse(s.text) == s  # what a record says reads back the same


@pytest.mark.parametrize("text", ["", "rr", "fifo:0", "fifo:100", "fifo:x", "other:5", "FIFO:50"])
def test_a_bad_napi_sched_names_the_choices(text):
    with pytest.raises(UsageError) as e:
        rxmode.NapiSched.parse(text)
    assert "`other`" in str(e.value) and "fifo:N" in str(e.value) and e.value.exit_status == 2


def test_an_unknown_rx_mode_names_the_modes():
    with pytest.raises(UsageError) as e:
        rxmode.check_mode("nic")
    assert all(m in str(e.value) for m in rxmode.RX_MODES)
    assert rxmode.check_mode(rxmode.DEFAULT_RX_MODE) == rxmode.DEFAULT_RX_MODE


def test_a_kernel_without_threaded_napi_is_told_to_use_rps(tmp_path):
    missing = tmp_path / "threaded"
    with pytest.raises(UsageError) as e:
        rxmode.check_available("napi", missing)
    assert "--rx-mode rps" in str(e.value) and "5.12" in str(e.value)
    rxmode.check_available("rps", missing)  # rps needs nothing of the kind
    missing.write_text("0\n")
    rxmode.check_available("napi", missing)


def test_napi_threads_are_found_by_their_cut_name(tmp_path):
    # comm holds 15 characters: "napi/cb1a2b3cc-8193" reads "napi/cb1a2b3cc-".
    for pid, comm in ((10, "napi/cb1a2b3cc-"), (11, "napi/cb1a2b3cc-"), (12, "napi/cb999999c-"), (13, "bash")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "comm").write_text(comm + "\n")
    (tmp_path / "self").mkdir()
    (tmp_path / "14").mkdir()  # a process gone between the listing and the read
    assert rxmode.thread_pids("cb1a2b3cc", tmp_path) == [10, 11]
    assert rxmode.thread_pids("cb000000c", tmp_path) == []


@pytest.mark.parametrize("text, frames", [("1", 1), ("1024", 1024), (" 4096 ", 4096), ("16384", 16384)])
def test_rx_ring_reads_frames_up_to_the_kernels_limit(text, frames):
    assert rxmode.parse_rx_ring(text) == frames


@pytest.mark.parametrize("text", ["0", "-1", "16385", "4k", "deep", "", "1.5"])
def test_a_bad_rx_ring_names_the_range(text):
    with pytest.raises(UsageError) as e:
        rxmode.parse_rx_ring(text)
    assert f"--rx-ring {text!r}" in str(e.value) and "1 to 16384" in str(e.value) and e.value.exit_status == 2


def test_the_ring_model_has_its_own_default_scheduling():
    assert rxmode.default_sched("cpumap") == rxmode.DEFAULT_RING_SCHED
    assert rxmode.default_sched("napi") == rxmode.DEFAULT_NAPI_SCHED
    assert 1 <= rxmode.DEFAULT_RX_RING <= rxmode.RX_RING_MAX


def test_the_cpumap_tracepoints_are_found_in_the_kernels_btf_or_symbols(tmp_path):
    btf, syms = tmp_path / "vmlinux", tmp_path / "kallsyms"
    btf.write_bytes(b"\0btf_trace_xdp_cpumap_enqueue\0btf_trace_xdp_cpumap_kthread\0")
    assert rxmode.kernel_has_tracepoints(rxmode.RING_TRACEPOINTS, btf, syms)
    btf.write_bytes(b"\0btf_trace_xdp_cpumap_enqueue\0")
    assert not rxmode.kernel_has_tracepoints(rxmode.RING_TRACEPOINTS, btf, syms)
    btf.unlink()  # no BTF: the symbols say
    syms.write_text("0 t __traceiter_xdp_cpumap_enqueue\n0 t __traceiter_xdp_cpumap_kthread\n")
    assert rxmode.kernel_has_tracepoints(rxmode.RING_TRACEPOINTS, btf, syms)
    syms.unlink()  # neither readable
    assert not rxmode.kernel_has_tracepoints(rxmode.RING_TRACEPOINTS, btf, syms)


def test_a_kernel_without_the_cpumap_tracepoints_is_told_to_use_napi(tmp_path):
    with pytest.raises(UsageError) as e:
        rxmode.check_available("cpumap", tmp_path, has_tracepoints=lambda names: False)
    assert "xdp_cpumap_enqueue" in str(e.value) and "--rx-mode napi" in str(e.value) and e.value.exit_status == 2
    rxmode.check_available("cpumap", tmp_path, has_tracepoints=lambda names: True)


def test_the_ring_thread_is_found_by_its_whole_name(tmp_path):
    # comm cuts "cpumap/1/map:16490" to "cpumap/1/map:16"; /proc/PID/stat holds a kernel thread's whole name.
    for pid, name in ((20, "cpumap/1/map:16490"), (21, "cpumap/1/map:164"), (22, "cpumap/0/map:16490"), (23, "bash")):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({name}) S 2 0 0 0 -1\n")
    (tmp_path / "24").mkdir()  # gone between the listing and the read
    assert rxmode.ring_thread_pids(1, 16490, tmp_path) == [20]
    assert rxmode.ring_thread_pids(1, 1649, tmp_path) == []


def test_the_counter_gets_the_ring_only_in_the_cpumap_model():
    assert rxmode.ring_args("cpumap", 4096, 1) == ["--ring", "4096", "--ring-cpu", "1"]
    assert rxmode.ring_args("napi", 4096, 1) == rxmode.ring_args("rps", 4096, 1) == []
