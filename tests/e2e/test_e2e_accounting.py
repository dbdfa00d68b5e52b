"""The link layer of the loss account on a real veth: which interface counter explains it."""

from __future__ import annotations

import shutil

import pytest
from capbench import loss_layers, netns
from capbench.rates import parse_rate
from capbench.trial import Measurer, TrialSetup

FRAMES = 300_000


@pytest.fixture
def threaded_napi(tb):
    """The capture veth's receive work in its own NAPI thread, not on the sending CPU.

    An unpaced generator then outruns it, and the veth's 256-frame receive ring overflows:
    frames are lost between the generator and the capture interface's XDP program (the
    link layer). GRO on gives the veth its NAPI before any XDP program does, so that
    `threaded` can be set before the trial; both are put back afterwards."""
    if shutil.which("ethtool") is None:
        pytest.fail("ethtool is missing: `make test` installs it")
    sysfs = f"/sys/class/net/{tb.cap_if}/threaded"
    netns.sh(tb.cap_ns, f"ethtool -K {tb.cap_if} gro on")
    try:
        netns.write_file(tb.cap_ns, sysfs, "1")
        yield
    finally:
        netns.write_file(tb.cap_ns, sysfs, "0")
        netns.sh(tb.cap_ns, f"ethtool -K {tb.cap_if} gro off")


def test_link_drops_are_the_capture_veths_own_count(binaries, tb, threaded_napi):
    setup = TrialSetup(backend="afp-v3", frame_len=64, link_bps=10e9, gen_args=("--count", str(FRAMES)))
    r = Measurer(binaries, tb, setup).measure(3, parse_rate("max"))
    stages = (r.sent, r.delivered, r.link_drops, r.backlog_drops, r.socket_drops, r.app_drops, r.unexplained,
              r.iface_rx_dropped, r.gen_tx_dropped)
    assert r.sent == FRAMES and r.link_drops > 1_000, stages
    # The generator's XDP transmit found the capture veth's ring full: the frames never reached
    # capbench-xdpcount. The capture veth counted them in rx_dropped (with the backlog's drops,
    # which the kernel charges to the device too), the generator's veth in tx_dropped.
    assert r.iface_rx_dropped == r.link_drops + r.backlog_drops, stages
    assert r.gen_tx_dropped == r.link_drops, stages
    # So the whole link layer is the interface's, counted once, and every loss is explained.
    counted = {name: n for name, n, _ in r.loss_layers}
    assert counted["interface"] == r.link_drops and "link" not in counted, r.loss_layers
    (interface,) = [c for name, _, c in r.loss_layers if name == "interface"]
    assert f"{tb.cap_if} rx_dropped" in interface and f"{tb.gen_if} tx_dropped: {r.gen_tx_dropped:,}" in interface
    assert sum(counted.values()) == r.lost - r.unexplained
    assert r.unexplained == 0, (stages, r.loss_layers, r.loss_remarks)
    assert not [x for x in r.loss_remarks if "rx_dropped" in x or "tx_dropped" in x], r.loss_remarks
    # The kernel's drop counters (backlog, socket) cannot see these losses; the remark says so.
    kernel, _ = loss_layers.kernel_drops(r)
    if r.seq_lost is not None and kernel != r.seq_lost:
        assert any(f"the link layer lost {r.link_drops:,} before those counters" in x for x in r.loss_remarks), \
            r.loss_remarks
