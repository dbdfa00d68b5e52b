"""The link layer of the loss account on a real veth: which interface counter explains it."""

from __future__ import annotations

import shutil

import pytest
from capbench.trial import loss_layers
from capbench.rates import parse_rate
from capbench.testbed import veth_pair as testbed
from capbench.trial.measure import Measurer, TrialSetup
from e2e_env import gen_engine, skip_without_xdp_frames

FRAMES = 300_000


@pytest.fixture(scope="module")
def napi_bed():
    """The napi model's test bed (the cpumap model's ring has its own tests: test_e2e_rx_ring)."""
    with testbed.testbed(rx_cpu=1, purpose="pytest e2e accounting", rx_mode="napi") as bed:
        yield bed


def test_ring_drops_are_the_senders_own_count(binaries, napi_bed):
    # The napi model runs the capture veth's NAPI in a thread on CPU 1: an unpaced generator
    # outruns it, and the veth's 256-frame receive ring overflows. The frames are lost between
    # the generator and the capture interface's XDP program.
    if shutil.which("ethtool") is None:
        pytest.fail("ethtool is missing: `make test` installs it")
    skip_without_xdp_frames()  # the frames it redirects are what the ring's counter counts
    tb = napi_bed
    setup = TrialSetup(backend="afp-v3", frame_len=64, link_bps=10e9, gen_args=("--count", str(FRAMES)),
                       engine=gen_engine())
    r = Measurer(binaries, tb, setup).measure(3, parse_rate("max"))
    stages = (r.sent, r.delivered, r.link_drops, r.ring_drops, r.backlog_drops, r.layers, r.app_drops,
              r.unexplained, r.iface_rx_dropped, r.gen_tx_dropped)
    assert r.sent == FRAMES and r.link_drops > 1_000, stages
    # veth_xdp_xmit counted every frame it found no room for in the sender's
    # tx_queue_N_xdp_xmit_errors; the capture veth's rx_dropped and the sender's tx_dropped
    # mirror it. No RPS: no backlog queue.
    assert r.ring_drops == r.link_drops == r.iface_rx_dropped == r.gen_tx_dropped, stages
    assert r.backlog_drops == 0, stages
    counted = {name: n for name, n, _ in r.loss_layers}
    assert counted["rx ring"] == r.link_drops and "link" not in counted, r.loss_layers
    (ring,) = [c for name, _, c in r.loss_layers if name == "rx ring"]
    assert f"{tb.gen_if} tx_queue_N_xdp_xmit_errors" in ring
    assert sum(counted.values()) == r.lost - r.unexplained
    assert r.unexplained == 0, (stages, r.loss_layers, r.loss_remarks)
    assert not [x for x in r.loss_remarks if "rx_dropped" in x or "tx_dropped" in x], r.loss_remarks
    # The ring's counter is a kernel counter too: with it, the kernel's counters and the
    # counter's sequence numbers agree, and no remark says otherwise.
    kernel, parts = loss_layers.kernel_drops(r)
    assert f"rx ring {r.ring_drops:,}" in parts
    if r.seq_lost is not None and r.seq_lost == r.lost:
        assert kernel == r.seq_lost
        assert not [x for x in r.loss_remarks if "the sequence numbers show" in x], r.loss_remarks
