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
                                         r"use --engine afpacket or a newer kernel"):
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
