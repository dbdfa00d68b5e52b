"""Issue 16, item 4: a stop is bounded in every backend. Under a sustained overload the rings never
empty, so a read loop that drained until empty would never return; each loop looks at the stop flag
before every packet and drains within a budget (cap.h: CAP_DRAIN_FRAMES, CAP_DRAIN_NS). On a real veth
test bed: the generator sends unpaced while a counter slowed to ~20 kpps reads, SIGTERM stops the
counter, and it must end in time with its summary, its counts adding up."""

from __future__ import annotations

import signal
import time

import pytest
from capbench import declared
from capbench.declared import backend_names, names_where
from capbench.testbed.procs import ChildSet

BACKENDS = backend_names()
KERNEL_COUNTER_BACKENDS = names_where(lambda b: b.kernel_counter)

# 50 us of work per frame: the counter reads ~20 kpps while the afpacket engine sends ~0.5 Mpps,
# so every ring is full at the stop and stays full while the counter drains.
SPIN = "spin:50000"
OVERLOAD_S = 1.2  # enough to fill the largest default ring (afp-v3: 32 MiB) at that rate
# The drain's budget is 250 ms (cap.h); after it come the join, the last statistics, the summary and
# close() (afxdp: detaching the program, deleting the socket and UMEM). Measured here on 2 vCPUs, the
# generator spinning on one and the counter on the other, in 9 runs of every backend while other test
# suites kept the load average at 4-6: 0.29-0.35 s, raw up to 0.45 s, xdp (no drain) 0.03-0.07 s. A stop
# that drained until empty never ends here (the counter is killed after 10 s). The bound is the issue's
# 1 s plus that worst case, for a vCPU stall of the kind the other e2e tests allow for.
STOP_BOUND_S = 1.5


def start_counter(kids: ChildSet, binaries, tb, backend: str):
    argv = [str(binaries.cap), "--iface", tb.cap_if, "--backend", backend, "--cpu", "1"]
    if backend not in KERNEL_COUNTER_BACKENDS:
        argv += ["--app-load", SPIN]
    cap = kids.start("capbench-cap", argv, netns_name=tb.cap_ns)
    cap.wait_for("ready", 10)
    return cap


def not_read(backend: str, s: dict) -> int:
    """Frames the kernel handed to the counter's socket or rings that it did not read: what was left
    in the ring at the stop (the application layer's share in capbench's accounting)."""
    k = s["kernel"]
    if declared.backend(backend).xsk_stats:  # kernel.packets: the frames the program redirected to the socket
        return k["packets"] - k["rx_dropped"] - k["rx_ring_full"] - s["packets"]
    return k["packets"] - k["drops"] - s["packets"]  # PACKET_STATISTICS (libpcap: ps_recv, ps_drop)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigterm_under_sustained_overload_ends_in_time_with_a_summary(binaries, tb, backend):
    with ChildSet() as kids:
        cap = start_counter(kids, binaries, tb, backend)
        gen = kids.start("capbench-gen", [str(binaries.gen), "--iface", tb.gen_if, "--engine", "afpacket",
                                          "--rate", "max", "--duration", "30", "--cpu", "0", "--trailer", "0",
                                          "--dst-mac", tb.dst_mac], netns_name=tb.gen_ns)
        gen.wait_for("interval", 10)
        time.sleep(OVERLOAD_S)
        assert cap.running and gen.running, (cap.stderr_lines, gen.stderr_lines)
        t0 = time.monotonic()
        cap.signal(signal.SIGTERM)
        rc = cap.stop(timeout_s=10.0, signalled=True)
        took_s = time.monotonic() - t0
        assert gen.running  # the overload lasted until the counter had stopped
        gen.stop()
        sent = gen.summary()["sent"]
    assert rc == 0, cap.stderr_lines
    assert took_s < STOP_BOUND_S, f"{backend} took {took_s:.3f} s to stop"
    s = cap.summary()
    print(f"{backend}: stopped in {took_s:.3f} s; packets {s['packets']}, kernel {s['kernel']}")
    assert s["backend"] == backend
    assert s["packets"] >= s["received"] + s["foreign"] > 0
    if backend in KERNEL_COUNTER_BACKENDS:
        # The ceiling counts in its XDP program: no ring, nothing to drain. Its statistics are read
        # once more after the read loop ended, while the traffic goes on.
        assert s["drained"] is True
        assert s["packets"] <= s["xdp"]["packets"] and s["received"] <= s["delivered"] <= sent
        return
    # The counter could not keep up: the kernel dropped, and the drain ended on its budget with
    # frames left in the ring, which the kernel counted as queued and the counter did not read.
    assert s["kernel_drops"] > 0 and s["drained"] is False, s
    left = not_read(backend, s)
    assert left > 0, s
    # Every frame that reached the socket is somewhere: read, dropped by the kernel, or left unread;
    # none of them is a frame the generator did not send.
    assert s["packets"] + s["kernel_drops"] + left <= sent + s["foreign"]
    # The sequence numbers agree with what was read: one stream, each number read once or lost.
    assert s["received"] + s["lost"] == s["max_seq"] + 1 and s["duplicates"] == 0, s
