"""Knobs (issue 30): the candidates come from the backends' declared option tables, a knob is set
once (--ring and the options it maps to are one buffer), `capbench run --vary` makes every
combination an axis that the steps and records carry, a trial is labelled with the buffer the
program says it ran, and the run's end names the knob that governs where it lost."""

from __future__ import annotations

import pytest
from capbench import declared
from capbench.binaries import find_binaries
from capbench.campaign import matrix as campaign
from capbench.campaign.matrix import Matrix
from capbench.cli.parser import build_parser
from capbench.cli.run import campaign_from_args
from capbench.errors import UsageError
from capbench.rates import parse_rate
from capbench.report import plots
from capbench.report.tables import WITHIN_SPREAD_MARK, ranking_tables
from capbench.trial import apps
from capbench.trial.apps import AdapterError
from capbench.trial.measure import Measurer, TrialSetup, ring_ran
from capbench.tune import knobs
from records import make_result
from calls import read_calls
from test_trial import local_testbed

KIB, MIB = 1 << 10, 1 << 20


def run_campaign(*argv: str) -> campaign.Campaign:
    return campaign_from_args(build_parser().parse_args(["run", *argv]))


def one_line(e: pytest.ExceptionInfo) -> str:
    text = str(e.value)
    assert "\n" not in text and text
    return text


# --- the space, from the declarations ------------------------------------------------------


def test_candidates_are_the_powers_of_two_of_the_declared_tune_range():
    block_size = declared.backend("afp-v3").option("--block-size")
    assert block_size.candidates == tuple(64 * KIB << i for i in range(7))  # 64k .. 4M, the C row's
    by_name = {k.name: k for k in knobs.space("afp-v3", ["afp-v3:block-size", "afp-v3:block-count"])}
    assert by_name["afp-v3:block-size"].candidates == ("64k", "128k", "256k", "512k", "1M", "2M", "4M")
    # The default space tries three of them: both ends of the range and the default.
    default = {k.name: k for k in knobs.space("afp-v3")}
    assert default["afp-v3:block-size"].candidates == ("64k", "1M", "4M")
    assert default["afp-v3:block-count"].candidates == ("4", "32", "128")
    assert by_name["afp-v3:block-size"].default == "1M" and by_name["afp-v3:block-count"].default == "32"
    assert declared.backend("fanout").option("--workers").candidates == (1, 2, 4)
    assert declared.backend("fanout").option("--fanout-mode").candidates == \
        declared.backend("fanout").option("--fanout-mode").choices
    assert declared.backend("afxdp").option("--busy-poll").candidates == ("off", "on")
    # An option that is no knob has none, and is no knob.
    assert declared.backend("afp-v3").option("--block-timeout").candidates == ()
    assert "afp-v3:block-timeout" not in by_name


@pytest.mark.parametrize("backend", ["pcap", "raw", "afp-v2", "afp-v3", "fanout", "afxdp", "xdp"])
def test_every_candidate_is_inside_its_options_declared_range_and_ascending(backend):
    for option in declared.backend(backend).options:
        for v in option.candidates:
            assert option.value_problem(str(v)) is None, (backend, option.name, v)
        numbers = [v for v in option.candidates if isinstance(v, int)]
        assert numbers == sorted(numbers)
        if option.type in ("bytes", "count"):
            assert all(v & (v - 1) == 0 for v in numbers), (backend, option.name)


def test_a_knob_governs_the_account_layers_whose_rows_name_it():
    by_name = {k.name: k for k in knobs.space("afxdp")}
    assert by_name["afxdp:ring-size"].governs == ("AF_XDP RX ring",)
    assert by_name["afxdp:frame-count"].governs[0] == "AF_XDP fill ring"
    # fanout's socket row names only --ring: the options --ring maps to govern it too
    assert {k.name: k for k in knobs.space("fanout")}["fanout:block-size"].governs == ("socket",)
    assert {k.name: k for k in knobs.space("afp-v3")}["afp-v3:block-count"].governs == ("socket",)


def test_the_default_space_keeps_the_finer_of_two_knobs_that_set_one_buffer():
    names = [k.name for k in knobs.space("afp-v3")]
    assert "ring" not in names and {"afp-v3:block-size", "afp-v3:block-count", "rx-ring"} <= set(names)
    assert "pin" not in names and [k.name for k in knobs.space("afp-v3", ["pin"])] == ["pin"]  # when asked
    assert "rx-ring" not in [k.name for k in knobs.space("afxdp")]  # its trials run as napi
    assert [k.name for k in knobs.space("afp-v3", ["ring"])] == ["ring"]  # still there by name
    with pytest.raises(UsageError) as e:
        knobs.space("xdp", ["ring"])  # no buffer to size
    assert "xdp has no knob 'ring'" in one_line(e)


def test_bad_knobs_and_values_are_one_line():
    for name, value, words in [("afp-v3:block-size", "3M", None),  # not a power of two: the program's check
                               ("afp-v3:block-count", "0", "give 1 to 65536"),
                               ("afp-v3:block-size", "lots", "give a size"),
                               ("afp-v3:nope", "1", "afp-v3 has no knob 'nope'"),
                               ("afp-v3:block-timeout", "10", "has no knob 'block-timeout'"),
                               ("pcap:block-size", "1M", "pcap has no knob 'block-size'"),
                               ("nosuch:block-size", "1M", "unknown knob"),
                               ("fanout:fanout-mode", "random", "give hash, lb")]:
        if words is None:
            assert campaign.check_knob_value(name, value, declared.backend_names()) == value
            continue
        with pytest.raises(UsageError) as e:
            campaign.check_knob_value(name, value, declared.backend_names())
        assert words in one_line(e), (name, value)


# --- a knob is set once --------------------------------------------------------------------


@pytest.mark.parametrize("argv, words", [
    (["--ring", "256k", "--backend-args", "afp-v3=--block-size 4M"], "--ring and --backend-args --block-size"),
    (["--ring", "256k", "--backend-args", "afp-v3=--block-count=8"], "--block-count both set afp-v3's buffer"),
    (["--ring", "256k", "--vary", "afp-v3:block-size=1M,4M"], "--ring and --vary --block-size"),
    (["--vary", "ring=256k,4M", "--vary", "afp-v3:block-count=8"], "--vary ring and --vary --block-count"),
    (["--ring", "4M", "--vary", "ring=256k"], "--ring and --vary ring both set ring"),
    (["--vary", "afp-v3:block-size=1M", "--backend-args", "afp-v3=--block-size 4M"], "which --vary"),
    (["--vary", "afxdp:ring-size=1024"], "afxdp is not measured"),
])
def test_a_knob_given_twice_is_refused_in_one_line(argv, words):
    with pytest.raises(UsageError) as e:
        run_campaign("--backends", "pcap,afp-v3", *argv)
    assert words in one_line(e)


def test_a_campaign_file_that_sets_the_buffer_twice_is_refused(tmp_path):
    text = '[campaign]\nbackends = ["afp-v3"]\nring = ["256k"]\n[campaign.backend_args]\n"afp-v3" = "--block-size 4M"\n'
    with pytest.raises(UsageError) as e:
        campaign.loads(text, tmp_path / "twice.toml", backends_known=declared.backend_names())
    assert "ring and backend_args --block-size both set afp-v3's buffer" in one_line(e)


def test_ring_alone_and_a_ring_option_alone_are_taken():
    assert run_campaign("--backends", "afp-v3", "--ring", "256k").steps()
    assert run_campaign("--backends", "afp-v3,pcap", "--ring", "256k",
                        "--backend-args", "pcap=--pcap-api dispatch").steps()
    assert run_campaign("--backends", "afp-v3", "--backend-args", "afp-v3=--block-size 4M").steps()


def test_apply_sets_a_configuration_once_and_refuses_it_beside_the_matrixs_own_ring():
    space = knobs.space("afp-v3")
    m = knobs.apply(Matrix(backends=("afp-v3",), sizes=(64,)), {"afp-v3:block-size": "256k", "rx-ring": "1024"},
                    space)
    (step,) = m.steps()
    assert step.knobs == (("afp-v3:block-size", "256k"), ("rx-ring", "1024"))
    assert step.knob_args == ("--block-size", "256k") and step.rx_ring == 1024
    assert knobs.label({"afp-v3:block-size": "256k", "rx-ring": "1024"}) == step.config
    with pytest.raises(UsageError):
        knobs.apply(Matrix(backends=("afp-v3",), rings=(256 * KIB,)), {"afp-v3:block-size": "1M"}, space)
    with pytest.raises(UsageError):
        knobs.apply(Matrix(backends=("afp-v3",)), {"afp-v3:block-count": "100000"}, space)
    assert knobs.run_args({"afp-v3:block-size": "256k", "rx-ring": "1024"}, space) == \
        ["--vary", "afp-v3:block-size=256k", "--rx-ring", "1024"]
    # the ready line runs: it builds the same configuration
    c = run_campaign("--backends", "afp-v3", "--sizes", "64", "--rx-mode", "cpumap",
                     *knobs.run_args({"afp-v3:block-size": "256k", "rx-ring": "1024"}, space))
    assert [s.knob_args for s in c.steps()] == [("--block-size", "256k")]


# --- capbench run --vary --------------------------------------------------------------------


def test_vary_makes_each_backends_combinations_steps_that_carry_them():
    c = run_campaign("--backends", "pcap,afp-v3", "--sizes", "64", "--vary", "afp-v3:block-size=1M,4M",
                     "--vary", "afp-v3:block-count=8,16", "--vary", "pin=A:A,A:B")
    steps = c.steps()
    afp = [s for s in steps if s.backend == "afp-v3"]
    pcap = [s for s in steps if s.backend == "pcap"]
    assert len(afp) == 8 and len(pcap) == 2  # pcap has only the run knob
    assert {s.pin for s in pcap} == {"A:A", "A:B"}
    assert len({s.key for s in steps}) == len(steps) == sum(m.size for m in c.matrices)
    s = afp[0]
    assert s.knob_args == ("--block-size", "1M", "--block-count", "8")
    assert "|knobs=afp-v3:block-size=1M afp-v3:block-count=8 pin=A:A|" in s.key
    assert s.backend_args == ""  # the user's own options stay apart (the record's backend_args)


def test_a_flag_knob_is_the_flag_or_nothing():
    c = run_campaign("--backends", "afxdp", "--sizes", "64", "--vary", "afxdp:busy-poll=off,on")
    assert [s.knob_args for s in c.steps()] == [(), ("--busy-poll",)]


def test_a_campaign_files_vary_table_is_the_same_axis(tmp_path):
    text = '[campaign]\nbackends = ["afp-v3"]\nsizes = [64]\n[campaign.vary]\n"afp-v3:block-size" = ["1M", "4M"]\n'
    c = campaign.loads(text, tmp_path / "v.toml", backends_known=declared.backend_names())
    assert [s.knob_args for s in c.steps()] == [("--block-size", "1M"), ("--block-size", "4M")]


@pytest.mark.parametrize("backend, vary, words", [
    ("afp-v3", "afp-v3:block-size", "give KNOB=V1,V2"),
    ("afp-v3", "afp-v3:block-size=", "give KNOB=V1,V2"),
    ("afp-v3", "afp-v3:block-size=1M,,4M", "separated by commas"),
    ("afp-v3", "afp-v3:block-count=1,999999", "give 1 to 65536"),
    ("afp-v3", "ring=1k", "give 4k to 1G"),
    ("afp-v3", "nosuch=1", "unknown knob 'nosuch'"),
    # a capture program's knobs are its adapter's
    ("tcpdump", "tcpdump:nope=1", "tcpdump has no knob 'nope': its knobs are buffer"),
    ("tcpdump", "tcpdump:buffer=-w", "a knob's value is one word"),
    ("tcpdump", "tcpdump:buffer=a b", "a knob's value is one word"),
])
def test_bad_vary_is_one_line(backend, vary, words):
    with pytest.raises(UsageError) as e:
        run_campaign("--backends", backend, "--vary", vary)
    assert words in one_line(e)


def test_vary_twice_for_one_knob_is_refused():
    with pytest.raises(UsageError) as e:
        run_campaign("--backends", "afp-v3", "--vary", "pin=A:A", "--vary", "pin=A:B")
    assert "--vary gives pin twice" in one_line(e)


# --- what a trial ran, from its program's summary ----------------------------------------------


def test_the_record_says_the_buffer_the_summary_says_it_ran():
    afp = declared.backend("afp-v3")
    # --ring 256k asked, a later --block-size won: the program's summary says 4 MiB
    assert ring_ran(afp, 256 * KIB, ("--block-size", "4M"), {"ring_bytes": 4 * MIB}) == 4 * MIB
    # a ring option alone sets it too
    assert ring_ran(afp, 0, ("--block-count", "8"), {"ring_bytes": 8 * MIB}) == 8 * MIB
    # nothing set: the backend's default, 0 as records have always said
    assert ring_ran(afp, 0, ("--block-timeout", "5"), {"ring_bytes": 32 * MIB}) == 0
    # a summary without it (a program from before): what was asked
    assert ring_ran(afp, 256 * KIB, (), {}) == 256 * KIB


def test_a_trial_records_its_knobs_and_the_ring_its_counter_reports(fake_build, monkeypatch):
    monkeypatch.setenv("FAKE_RING_BYTES", str(4 * MIB))
    setup = TrialSetup(backend="afp-v3", frame_len=64, settle_s=0, ring_bytes=256 * KIB,
                       knobs=(("afp-v3:block-size", "4M"),), knob_args=("--block-size", "4M"))
    r = Measurer(find_binaries(), local_testbed(rx_cpu=1), setup).measure(0.1, parse_rate("10kpps"))
    (cap,) = [c for c in read_calls(fake_build) if c[0] == "capbench-cap"]
    assert cap.index("--block-size", cap.index("--block-count")) > cap.index("--block-count")  # after --ring's
    assert r.ring_bytes == 4 * MIB and r.knobs == {"afp-v3:block-size": "4M"} and r.backend_args == ""
    assert r.to_record()["knobs"] == {"afp-v3:block-size": "4M"}


# --- the settings ranked, side by side, and the advice -----------------------------------------


def lossy(config: dict[str, str], rep: int, lost: int, step: str = ""):
    """An iperf trial of afp-v3 at 64 B with these knobs that lost `lost` of 100,000 in the socket."""
    sent = 100_000
    return make_result(backend="afp-v3", sent=sent, received=sent - lost, socket_drops=lost, repeat=rep,
                       knobs=config, step=step or f"iperf|afp-v3|64|pin=A:A|load=touch|procs=1|knobs={config}|rep={rep}")


def test_settings_are_ranked_by_loss_with_their_spreads():
    small, large = {"afp-v3:block-size": "64k"}, {"afp-v3:block-size": "4M"}
    trials = [lossy(small, 1, 3000), lossy(small, 2, 3300), lossy(small, 3, 2900),
              lossy(large, 1, 10), lossy(large, 2, 0), lossy(large, 3, 40)]
    (table,) = ranking_tables(trials)
    assert [row[1] for row in table.rows] == ["afp-v3:block-size=4M", "afp-v3:block-size=64k"]
    assert table.rows[0][0] == "1" and table.rows[1][0] == "2"  # apart: no ≈
    assert "–" in table.rows[0][2] and table.rows[0][4] == "3"  # the spread of 3 repetitions
    close = trials[3:] + [lossy(small, 1, 30), lossy(small, 2, 5)]
    (table,) = ranking_tables(close)
    assert table.rows[1][0] == f"2{WITHIN_SPREAD_MARK}"
    assert ranking_tables(trials[:3]) == []  # one setting: nothing to rank


def test_several_settings_at_one_length_are_drawn_side_by_side():
    dx = plots._dodge(["a", "b", "c"], [64])
    assert sorted(dx.values()) == [dx["a"], dx["b"], dx["c"]] and dx["b"] == 0 and dx["a"] < 0 < dx["c"]
    assert max(dx.values()) - min(dx.values()) < 2 * plots._half_range(64)  # inside the axis
    assert set(plots._dodge(["a", "b"], range(64, 1600, 100)).values()) == {0.0}  # a long axis: lines


def test_the_advice_names_the_knob_of_the_layer_that_lost():
    trials = [lossy({}, 1, 3000, step="iperf|afp-v3|64|pin=A:A|load=touch|procs=1|rep=1")]
    (line,) = knobs.advice_lines(trials)
    assert "the socket layer lost 3,000 (PACKET_STATISTICS tp_drops)" in line
    assert "capbench tune --backends afp-v3 --sizes 64 --knobs afp-v3:block-size,afp-v3:block-count" in line
    # no loss, or loss no counter shows in a governed layer: nothing
    assert knobs.advice_lines([lossy({}, 1, 0)]) == []
    unseen = make_result(backend="afp-v3", sent=1000, received=900, step="iperf|afp-v3|64|rep=1")
    assert knobs.advice_lines([unseen]) == []


# --- a capture program's knobs: fields of its adapter's template -------------------------------


def test_tcpdumps_buffer_is_a_knob_of_its_template():
    tcpdump = apps.builtin()["tcpdump"]
    argv = tcpdump.argv(iface="i", out="o", cpu=None, duration_s=1, outdir="d")
    assert argv[argv.index("-B") + 1] == "2048"  # its default: tcpdump's own
    argv = tcpdump.with_knob_values({"buffer": "256"}).argv(iface="i", out="o", cpu=None, duration_s=1, outdir="d")
    assert argv[argv.index("-B") + 1] == "256"
    (k,) = [k for k in knobs.space("tcpdump") if k.scope == "backend"]
    assert (k.name, k.flag, k.governs, k.candidates[0]) == ("tcpdump:buffer", "{buffer}", ("socket",), "256")


def test_vary_of_a_programs_knob_reaches_its_command_not_capbench_caps():
    c = run_campaign("--backends", "tcpdump", "--sizes", "64", "--vary", "tcpdump:buffer=256,4096")
    steps = c.steps()
    assert [s.knobs for s in steps] == [(("tcpdump:buffer", "256"),), (("tcpdump:buffer", "4096"),)]
    assert all(s.knob_args == () for s in steps)
    assert campaign.program_knob_values(steps[1].knobs, "tcpdump") == {"buffer": "4096"}



def test_an_adapter_file_declares_knobs_and_refuses_a_bad_one(tmp_path):
    good = ('[mydump]\ncommand = "tcpdump -i {iface} -B {buf} -w {out}"\nfile_format = "pcap"\n'
            '[mydump.knobs.buf]\ncandidates = [1024, 4096]\ndefault = 2048\n')
    a = apps.parse(good, "mine.toml")["mydump"]
    assert a.knob_names == ("buf",) and a.knob("buf").candidates == ("1024", "4096")
    for bad, words in [(good.replace("{buf}", "{buff}"), "unknown field {buff}"),
                       (good.replace("default = 2048", "default = \"-x\""), "one word"),
                       (good.replace("[mydump.knobs.buf]", "[mydump.knobs.iface]").replace("{buf}", "{iface}"),
                        "a knob's name"),
                       (good + "colour = 1\n", "unknown key")]:
        with pytest.raises(AdapterError) as e:
            apps.parse(bad, "mine.toml")
        assert words in one_line(e), bad
