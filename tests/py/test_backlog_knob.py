"""The backlog knob (issue 30): the receive CPU's backlog queue (net.core.netdev_max_backlog) as
a knob governing the backlog layer, declared once in tune/knobs.py with candidates spread over a
declared range, searched where the test bed's receive model puts frames in it (rps), held for
each step at exactly its value through the host-settings registry and put back (a fake /proc/sys
and registry here; tests/e2e/test_e2e_tune_programs.py on the real one)."""

from __future__ import annotations

import pytest
from capbench.campaign import matrix as cmod
from capbench.cli import run as run_cli
from capbench.cli import tune as tune_cli
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args
from capbench.errors import UsageError
from capbench.owners import Holder, HostSettings
from capbench.report import keys
from capbench.testbed import host_sysctl, rxmode
from capbench.testbed import veth_pair
from capbench.testbed.veth_pair import hold_backlog
from capbench.trial import loss_layers
from capbench.tune import knobs, output
from records import make_result
from test_host_sysctl import proc_sys  # noqa: F401 (a fixture: a fake /proc/sys at 1000)


def one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text and text
    return text


def test_the_backlog_knob_is_declared_once_over_its_range_and_governs_the_backlog_layer():
    k = knobs.BACKLOG
    assert (k.name, k.scope, k.default, k.governs) == ("backlog", "host", "", (loss_layers.BACKLOG,))
    lo, hi = knobs.BACKLOG_RANGE
    values = [int(v) for v in k.candidates]
    assert values[0] == lo and values[-1] == hi and values == sorted(values)
    assert all(b == 4 * a for a, b in zip(values, values[1:]))  # a factor of four apart
    # in the default space with --rx-mode rps, three of them spread over the range; not in cpumap,
    # whose thread hands frames to the stack past no backlog queue
    (rps,) = [x for x in knobs.space("afp-v3", rx_mode="rps") if x.name == "backlog"]
    assert rps.candidates == (str(lo), str(values[len(values) // 2]), str(hi))
    assert "backlog" not in [x.name for x in knobs.space("afp-v3")]
    assert "rx-ring" not in [x.name for x in knobs.space("afp-v3", rx_mode="rps")]
    assert [x.name for x in knobs.space("tcpdump", rx_mode="rps")] == ["backlog", "tcpdump:buffer"]
    # a backend whose own XDP program takes the frames before any backlog has no backlog knob
    assert "backlog" not in [x.name for x in knobs.space("afxdp", rx_mode="rps")]


def test_a_tune_with_rx_mode_rps_searches_the_backlog_and_refuses_it_elsewhere():
    t = tune_cli.tune_of(build_parser().parse_args(["tune", "--backends", "afp-v3", "--rx-mode", "rps", "--knobs",
                                                    "backlog", "--budget", "20m"]))
    assert [dict(c) for c in t.spaces[0].configs] == [{}] + [{"backlog": v} for v in knobs.BACKLOG_CANDIDATES]
    step = t.step(t.spaces[0], 1, 0, 1)
    assert step.backlog == int(knobs.BACKLOG_CANDIDATES[0]) and "backlog=" in step.key
    for argv, said in (
            (("--knobs", "backlog"), "knob backlog sets what only --rx-mode rps passes (this run's is cpumap)"),
            (("--rx-mode", "rps", "--candidates", "backlog=0,1000"), "backlog '0': give a packet count"),
            (("--rx-mode", "rps", "--knobs", "rx-ring"), "knob rx-ring sets what only --rx-mode cpumap passes"),
            (("--rx-mode", "sideways",), "--rx-mode")):
        with pytest.raises(UsageError) as e:
            tune_cli.tune_of(build_parser().parse_args(["tune", "--backends", "afp-v3", *argv, "--budget", "20m"]))
        assert said in one_line(e)


def test_vary_backlog_sets_each_steps_backlog_and_is_set_once():
    c = campaign_from_args(build_parser().parse_args(["run", "--backends", "pcap", "--sizes", "64",
                                                      "--vary", "backlog=300,5000"]))
    assert [(s.backlog, s.config) for s in c.steps()] == [(300, "backlog=300"), (5000, "backlog=5000")]
    run_cli.check_backlog_knob(c, "rps", False, None)
    for args, said in (((c, "rps", False, 10_000), "--backlog 10000 and --vary backlog both set"),
                       ((c, "cpumap", False, None), "add --rx-mode rps"),
                       ((c, "rps", True, None), "on your own ports or hosts give --backlog N")):
        with pytest.raises(UsageError) as e:
            run_cli.check_backlog_knob(*args)
        assert said in one_line(e)
    with pytest.raises(UsageError) as e:
        campaign_from_args(build_parser().parse_args(["run", "--backends", "pcap", "--vary", "backlog=lots"]))
    assert "backlog 'lots': give a packet count from 1 to 2147483647" in one_line(e)


def test_the_best_backlog_is_a_vary_in_the_run_line_and_the_campaign_file():
    t = tune_cli.tune_of(build_parser().parse_args(["tune", "--backends", "pcap", "--rx-mode", "rps", "--knobs",
                                                    "backlog", "--rate", "100kpps", "--budget", "20m"]))
    space = t.spaces[0]
    best = next(i for i, cfg in enumerate(space.configs) if cfg.get("backlog") == "16384")
    assert knobs.run_args(space.configs[best], space.knobs) == ["--vary", "backlog=16384"]
    from capbench.tune import search

    t.results["pcap"] = search.Outcome(final_rung=0)
    text = output.campaign_toml(t, space, best)
    assert 'vary = { "backlog" = ["16384"] }' in text
    c = cmod.loads(text, __import__("pathlib").Path("best.toml"), backends_known=("pcap",))
    assert sorted({s.backlog for s in c.steps()}) == [0, 16384]


def test_a_record_of_a_set_backlog_is_its_own_series_and_the_advice_names_the_knob():
    base = dict(backend="afp-v3", sent=100_000, received=97_000, backlog_drops=3_000, rx_mode="rps",
                step="iperf|afp-v3|64|pin=A:A|load=touch|procs=1|rep=1")
    set_here = make_result(**base, backlog=300, knobs={"backlog": "300"})
    assert ("backlog", "300 packets") in keys.series_key(set_here).extra
    assert keys.without_knobs(set_here) == keys.without_knobs(make_result(**base))
    (line,) = knobs.advice_lines([make_result(**base)])
    assert "the backlog layer lost 3,000" in line and "--knobs backlog" in line
    # in the cpumap model no backlog knob is offered: the frames pass no backlog queue
    assert all("--knobs backlog" not in x for x in knobs.advice_lines([make_result(**base | {"rx_mode": "cpumap"})]))


def test_each_step_holds_exactly_its_backlog_and_the_host_gets_its_own_back(proc_sys, tmp_path):
    registry, tb = HostSettings(tmp_path / "run"), veth_pair.Testbed.named("abc123", 1)
    hold_backlog(tb, None, registry)  # never set: nothing to do
    assert proc_sys.read_text() == "1000\n" and registry.held() == {}
    hold_backlog(tb, 256, registry)  # lower than the host's: exactly
    assert proc_sys.read_text() == "256\n"
    hold_backlog(tb, 65536, registry)
    assert proc_sys.read_text() == "65536\n"
    hold_backlog(tb, None, registry)  # a step that leaves it to the host: what the host had
    assert proc_sys.read_text() == "1000\n"
    hold_backlog(tb, 4096, registry)
    registry.release(tb.id)  # the test bed removed: put back
    assert proc_sys.read_text() == "1000\n" and registry.held() == {}


def test_another_run_holding_the_backlog_exactly_refuses_another_value(proc_sys, tmp_path):
    registry = HostSettings(tmp_path / "run")
    other = Holder.of_this_process("other1")
    registry.hold(other, host_sysctl.setting(host_sysctl.BACKLOG, 2000, exact=True))
    with pytest.raises(UsageError) as e:
        hold_backlog(veth_pair.Testbed.named("abc123", 1), 256, registry)
    assert "held at 2000 by other1" in one_line(e)
    assert proc_sys.read_text() == "2000\n"
    registry.release("other1")
    assert proc_sys.read_text() == "1000\n"


def test_rxmode_declares_where_frames_pass_the_backlog():
    assert set(rxmode.BACKLOG_MODES) <= set(rxmode.RX_MODES)
    assert knobs.BACKLOG.rx_modes == rxmode.BACKLOG_MODES
