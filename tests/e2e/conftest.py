"""End-to-end fixtures: the real C programs on a real veth test bed in private namespaces.

Every test bed gets a fresh random id (capbench-<id>-gen / -cap), so these tests
run beside each other and beside a user's own runs; the `with` block removes it
whatever happens. They need root (namespaces, XDP) and the meson build.
"""

from __future__ import annotations

import os
import signal

import pytest
from capbench.testbed import cpu
from capbench.testbed import netns
from capbench.testbed import veth_pair as testbed
from capbench.trial import witness
from capbench.binaries import Binaries, find_binaries
from capbench.errors import UsageError

from e2e_env import missing_prerequisite, skip_without_engine


@pytest.fixture(scope="session")
def binaries() -> Binaries:
    os.environ.pop("CAPBENCH_BUILD_DIR", None)
    try:
        return find_binaries()
    except UsageError as e:
        pytest.fail(f"the C programs are not built: {e}")


# A suite started with SIGINT ignored (a background job of a non-interactive shell) would hand
# that on to every capbench it starts, and the tests of Ctrl-C would stop nothing: the default again
# (a Python handler: what the suite starts gets SIG_DFL at exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def engines_where_they_run(request):
    """A test run with each generator engine (parametrized `engine`) skips those the kernel does not
    run (e2e_env.engine_refusal)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "engine" in callspec.params:
        skip_without_engine(callspec.params["engine"])


@pytest.fixture(scope="session", autouse=True)
def interference_witness(binaries):
    """capbench's interference witness on every CPU for the whole session, as `capbench run` starts
    one for its run: the trials the tests measure directly (a Measurer on a test bed) then say, as a
    run's do, whether the host disturbed them (host_interference decides repetitions from that)."""
    with witness.running(witness.program_path(binaries), cpu.usable_cpus()) as w:
        yield w


# The tests that expect no loss run at 100 kpps; the VMs this runs on stall a vCPU
# for up to 20 ms several times a second, and the default backlog of 1,000 packets
# lasts 10 ms at that rate, so a stalled receive CPU would drop in its backlog
# (the accounting explains those drops; the no-loss tests would still fail).
# 10,000 packets last 100 ms. Put back when the test bed goes.
E2E_BACKLOG = 10_000


@pytest.fixture(scope="module")
def tb(binaries):
    """A test bed for one test module: receive work steered to CPU 1 (the default placement)."""
    why = missing_prerequisite()
    if why:
        pytest.skip(why)
    with testbed.testbed(rx_cpu=1, purpose="pytest e2e", backlog=E2E_BACKLOG) as bed:
        yield bed
    assert bed.gen_ns not in netns.list_netns()
