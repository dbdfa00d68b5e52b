"""backend_status: `capbench backends` says whether each backend works here, or exactly why not."""

from __future__ import annotations

import errno
import os
import socket

import pytest
from capbench.declared import backend_names
from capbench.errors import UsageError
from capbench.testbed import preflight


@pytest.mark.parametrize("backend", backend_names())
def test_every_backend_has_a_status_with_a_reason(backend):
    ok, why = preflight.backend_status(backend)
    assert isinstance(ok, bool)
    assert why and why != "unknown backend"


def test_unknown_backend():
    assert preflight.backend_status("pfring") == (False, "unknown backend")


def test_afxdp_without_libxdp_says_so(monkeypatch):
    monkeypatch.setattr(preflight.ctypes.util, "find_library", lambda name: None if name == "xdp" else "lib.so")
    assert preflight.backend_status("afxdp") == (False, "libxdp not found: apt-get install libxdp1 "
                                                        "(and libxdp-dev to build)")


def test_xdp_backends_on_an_old_kernel(monkeypatch):
    monkeypatch.setattr(preflight, "kernel_version", lambda release=None: (5, 4))
    for name in ("afxdp", "xdp"):
        ok, why = preflight.backend_status(name)
        assert not ok and "bpf_link" in why and "5.9" in why


def test_afxdp_on_a_kernel_without_af_xdp(monkeypatch):
    monkeypatch.setattr(preflight, "bpf_syscall_error", lambda: None)

    def no_af_xdp(family, *args):
        if family == preflight.AF_XDP:
            raise OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT))
        return real_socket(family, *args)

    real_socket = socket.socket
    monkeypatch.setattr(preflight.socket, "socket", no_af_xdp)
    assert preflight.backend_status("afxdp") == (False, "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)")


@pytest.mark.skipif(os.geteuid() != 0, reason="AF_XDP sockets and bpf() need root")
def test_both_work_here_and_afxdp_names_the_missing_zero_copy():
    ok, why = preflight.backend_status("afxdp")
    assert ok, why
    assert "veth has no zero-copy" in why
    assert preflight.backend_status("xdp")[0]


def test_the_engine_that_needs_live_frames_names_the_others_on_an_old_kernel(monkeypatch):
    monkeypatch.setattr(preflight, "kernel_version", lambda release=None: (5, 10))
    monkeypatch.setattr(preflight, "bpf_syscall_error", lambda: None)
    monkeypatch.setattr(preflight, "bpffs_supported", lambda: True)
    with pytest.raises(UsageError, match=r"the xdp engine needs BPF_PROG_RUN live frames \(Linux >= 5.18\).*"
                                         r"use --engine xdploop or afpacket or a newer kernel"):
        preflight.check_engine("xdp")
    preflight.check_engine("afpacket")


def test_every_need_a_backend_declares_has_a_check():
    from capbench import declared

    for b in declared.backends():
        assert set(b.needs) <= set(preflight.NEED_CHECKS), b.name


def test_a_backend_status_is_its_first_failing_need_in_table_order(monkeypatch):
    """afxdp needs libxdp, af_xdp and xdp_link: without libxdp, that is the reason, whatever else fails."""
    monkeypatch.setattr(preflight, "kernel_version", lambda release=None: (5, 4))
    monkeypatch.setattr(preflight.ctypes.util, "find_library", lambda name: None)
    assert preflight.backend_status("afxdp")[1].startswith("libxdp not found")
    assert preflight.backend_status("pcap")[1].startswith("libpcap not found")


def test_a_need_this_capbench_cannot_check_says_so(monkeypatch):
    import dataclasses

    from capbench import declared

    newer = dataclasses.replace(declared.backend("raw"), needs=("packet_socket", "dpdk"))
    monkeypatch.setattr(declared, "backend", lambda name: newer)
    assert preflight.backend_status("raw") == (False, "it needs dpdk, which this capbench cannot check: "
                                                      "rebuild with make")


def mask(*caps: str) -> int:
    return sum(1 << preflight.CAPABILITIES[c][0] for c in caps)


def test_capability_numbers_are_the_kernels():
    # linux/capability.h: CAP_DAC_OVERRIDE 1, CAP_NET_ADMIN 12, CAP_NET_RAW 13, CAP_IPC_LOCK 14,
    # CAP_SYS_ADMIN 21, CAP_SYS_NICE 23, CAP_PERFMON 38, CAP_BPF 39
    assert {c: n for c, (n, _) in preflight.CAPABILITIES.items()} == {
        "dac_override": 1, "net_admin": 12, "net_raw": 13, "ipc_lock": 14, "sys_admin": 21, "sys_nice": 23,
        "perfmon": 38, "bpf": 39}


def test_effective_caps_reads_cap_eff(tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapInh:\t0000000000000000\nCapPrm:\t000000c000203000\n"
                      "CapEff:\t000000c000003000\nCapBnd:\t000001ffffffffff\n")
    assert preflight.effective_caps(str(status)) == mask("net_admin", "net_raw", "perfmon", "bpf")


def test_this_process_has_what_its_status_file_says():
    with open("/proc/self/status") as f:
        eff = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    assert preflight.effective_caps() == eff


def test_all_capabilities_pass():
    preflight.require_caps("capbench run", preflight.RUN_CAPS, mask(*preflight.CAPABILITIES))


def test_missing_capabilities_are_named_with_why_and_how_to_grant():
    have = mask(*(c for c in preflight.RUN_CAPS if c not in ("sys_nice", "bpf")))
    with pytest.raises(UsageError) as e:
        preflight.require_caps("capbench run", preflight.RUN_CAPS, have)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("capbench run needs CAP_SYS_NICE (placing the NAPI kernel thread on the receive CPU), "
                          "CAP_BPF (BPF programs and maps): run it as root")
    grant = ",".join("+" + c for c in preflight.RUN_CAPS)
    assert f"--inh-caps {grant} --ambient-caps {grant} capbench run" in msg
    assert "CAP_NET_RAW" not in msg


def test_root_without_capabilities_is_refused():
    # The user id is not asked: a root whose capabilities were dropped (a container) is refused too.
    with pytest.raises(UsageError, match="CAP_NET_ADMIN"):
        preflight.require_caps("capbench testbed up", preflight.TESTBED_CAPS, mask("sys_admin", "dac_override"))


def test_a_bpf_syscall_refused_for_want_of_capabilities_names_them(monkeypatch):
    # EPERM: the process lacks CAP_BPF (the kernel has bpf()); another errno: the kernel.
    monkeypatch.setattr(preflight, "bpf_syscall_error", lambda: "EPERM (Operation not permitted)")
    ok, why = preflight.backend_status("xdp")
    assert not ok and "CAP_BPF" in why and "CONFIG_BPF_SYSCALL" not in why
    with pytest.raises(UsageError, match="grant CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON"):
        preflight.check_bpf()
    monkeypatch.setattr(preflight, "bpf_syscall_error", lambda: "ENOSYS (Function not implemented)")
    with pytest.raises(UsageError, match="CONFIG_BPF_SYSCALL"):
        preflight.check_bpf()


def test_a_backend_built_without_its_library_says_why(monkeypatch):
    # capbench-cap built without libdpdk still declares dpdk, with the reason it cannot run:
    # `capbench backends` and a run's checks say that line, before anything else is checked.
    import dataclasses
    from types import SimpleNamespace

    from capbench import declared

    why = "capbench-cap was built without DPDK (meson found no libdpdk): apt-get install libdpdk-dev, then rebuild"
    real = declared.cap()
    absent = dataclasses.replace(real.backend("dpdk"), absent=why)
    fake = dataclasses.replace(real, backends=tuple(absent if b.name == "dpdk" else b for b in real.backends))
    monkeypatch.setattr(declared, "cap", lambda: fake)
    assert preflight.backend_status("dpdk") == (False, why)
    campaign = SimpleNamespace(matrices=[SimpleNamespace(backends=("afp-v3", "dpdk"), backend_args=(), procs=(1,),
                                                        rings=(0,))])
    with pytest.raises(UsageError, match=r"^--backends dpdk: capbench-cap was built without DPDK"):
        preflight.check_backend_args(campaign, "capbench-cap")


def test_the_describe_document_reads_absent_and_polls():
    from capbench import declared

    dpdk = declared.backend("dpdk")
    assert dpdk.polls and not declared.backend("afxdp").polls
    assert dpdk.absent is None or "libdpdk" in dpdk.absent
