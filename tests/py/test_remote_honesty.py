"""Issue 28 item 6 on real interfaces and remote sensors: --rx-mode was accepted and ignored there,
the records said rx_mode "rps" (hard-coded), and a kernel load nobody measured (no receive CPU)
was recorded and printed as 0.0."""

from __future__ import annotations

import pytest

from capbench.report import stats, tables
from capbench.testbed.ports import NIC_RX_MODE
from capbench.trial.measure import TrialSetup
from capbench.trial.record import load_trial
from capbench.trial.remote_side import SPEC_VERSION, agent_measurer, setup_to_json
from records import make_result
from test_cli import assert_usage_error, capbench


@pytest.mark.parametrize("argv,flag", [
    (("run", "--topology", "hosts.toml", "--rx-mode", "napi"), "--rx-mode"),
    (("run", "--topology", "hosts.toml", "--napi-sched", "fifo:50"), "--napi-sched"),
    (("run", "--gen-iface", "lo", "--cap-iface", "lo", "--rx-mode", "napi"), "--rx-mode"),
])
def test_the_receive_model_option_is_refused_where_it_cannot_apply(argv, flag):
    assert_usage_error(capbench(*argv), flag, "leave out" if "--gen-iface" in argv else "give it no")


def test_a_remote_sensor_records_its_nics_receive_model_not_rps():
    """What `capbench side` on a sensor host measures with: its interface, no receive CPU given."""
    m = agent_measurer({"spec": SPEC_VERSION, "iface": "eth1", "netns": None, "rx_cpu": None, "duration_s": 1.0,
                        "build_dir": "/nonexistent", "setup": setup_to_json(TrialSetup(backend="afp-v3", frame_len=64))})
    assert m.testbed.rx_mode == NIC_RX_MODE and m.kernel_rx_cpu is None


def test_a_kernel_load_not_measured_is_a_dash_never_zero():
    r = make_result(kernel_cpu_pct=None)
    assert load_trial(r.to_record()).kernel_cpu_pct is None
    load = tables.HEADERS.index("App / kernel load [%]")
    assert tables.row_cells([r])[load].endswith("/ —")
    assert tables.row_cells([r, make_result(kernel_cpu_pct=None, repeat=2)])[load].startswith("63.6 / —")
    assert stats.stat_of([None, 2.0, None]).n == 1 and stats.load_text(stats.stat_of([None])) == stats.NOT_MEASURED
