"""Program adapters (capbench.trial.apps): the built-in ones read the outputs measured in a test bed
(tests/py/fixtures/apps), the schema refuses what it cannot use in one line, and docs/apps.md's
worked examples load and read their documented output."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from capbench.trial import apps
from capbench.trial.apps import AdapterError, CountError

ROOT = Path(__file__).parents[2]
FIXTURES = Path(__file__).parent / "fixtures" / "apps"
RESERVED = ("pcap", "raw", "afp-v2", "afp-v3", "fanout", "afxdp", "xdp")


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def counts_of(adapter: str, run: str, files: dict[str, str] | None = None) -> tuple[dict[str, int], dict]:
    d = fixture(f"{adapter}-{run}")
    return apps.builtin()[adapter].read_counts(d["stdout"], d["stderr"], files or {}), d


# --- the built-in adapters read what the programs printed -------------------------------

EXPECTED = {
    ("tcpdump", "100k"): {"captured": 100000, "seen": 100000, "dropped": 0, "ifdropped": 0},
    ("tcpdump", "nosettle"): {"captured": 98464, "seen": 100000, "dropped": 0, "ifdropped": 0},
    ("tcpdump", "overload"): {"captured": 1396607, "seen": 1441607, "dropped": 45000, "ifdropped": 0},
    ("dumpcap", "100k"): {"captured": 97383, "dropped": 0, "dumpcap_dropped": 0, "ifdropped": 0},
    ("dumpcap", "overload"): {"captured": 685580, "dropped": 343668, "dumpcap_dropped": 0, "ifdropped": 0},
    ("tshark", "100k"): {"captured": 97705, "dropped": 0},
    ("tshark", "overload"): {"captured": 742902, "dropped": 288234},
    ("netsniff-ng", "100k"): {"captured": 97788, "queued": 97788, "dropped": 0},
    ("netsniff-ng", "overload"): {"captured": 1405876, "queued": 1405876, "dropped": 22613},
    # its default ring (2,384 MiB here): "Running!" 5.6 s after the start, then 0 of 59,360, exit status 0
    ("netsniff-ng", "default-ring"): {"captured": 0, "queued": 0, "dropped": 0},
}


@pytest.mark.parametrize(("adapter", "run"), sorted(EXPECTED))
def test_builtin_reads_its_fixtures(adapter, run):
    counts, d = counts_of(adapter, run)
    assert counts == EXPECTED[adapter, run]
    assert counts["captured"] == d["capinfos_count"]  # the program's count is its file's
    if "dropped" in counts and run not in ("nosettle", "default-ring"):  # every frame that reached the interface is accounted
        assert counts["captured"] + counts["dropped"] == d["delivered"]


def test_fixture_commands_are_the_adapters_apart_from_the_buffer():
    """The 100 kpps runs used the built-in command; the overload runs only shrank the buffer. The
    buffer knob tcpdump's command has since (-B {buffer}) runs at its default, libpcap's own 2 MiB,
    which those runs left to libpcap."""
    for name, a in apps.builtin().items():
        if a.file_format is not None:  # (argus's own run is its end-to-end test)
            assert fixture(f"{name}-100k")["command"] == a.command.replace(" -B {buffer}", "")
    tcpdump = apps.builtin()["tcpdump"]
    assert tcpdump.knob("buffer").default == "2048"  # KiB: libpcap's default buffer on Linux, 2 MiB


@pytest.mark.parametrize("name", ["tcpdump", "dumpcap", "tshark", "netsniff-ng"])
def test_ready_pattern_is_in_the_output_on_its_stream(name):
    a = apps.builtin()[name]
    d = fixture(f"{name}-probe")
    assert any(re.search(a.ready_pattern, line) for line in d[a.ready_stream].splitlines())  # per line
    # measured: the program took frames no later than its ready line (+ 10 ms of timing noise)
    assert d["first_frame_at_s"] <= d["ready_at_s"] + 0.01


def test_testpmd_reads_the_port_statistics_it_printed():
    """testpmd rxonly (DPDK 22.11) writes no file: its counts are the port's statistics, printed each
    second (--stats-period) and at its exit (the forward statistics, after SIGINT: exit status 0);
    its sockets' drops, which it never reads, capbench reads before the stop (the lines it makes)."""
    counts, d = counts_of("testpmd", "100k", {apps.PACKET_STATISTICS: "tp_packets 100000\ntp_drops 0"})
    assert counts == {"captured": 100_000, "dropped": 0, "errors": 0, "nombuf": 0, "tp_drops": 0}
    with pytest.raises(apps.CountError, match="tp_drops"):
        counts_of("testpmd", "100k")  # not read: the count is missing, not 0
    assert counts["captured"] == d["delivered"] == d["sent"] and d["exit_status"] == 0
    a = apps.builtin()["testpmd"]
    assert d["command"] == a.command and any(re.search(a.ready_pattern, line) for line in d["stdout"].splitlines())


def test_builtin_adapters_are_sound():
    b = apps.builtin()
    assert set(b) == {"tcpdump", "dumpcap", "tshark", "netsniff-ng", "argus", "testpmd"}
    assert [name for name, a in b.items() if a.polls] == ["testpmd"]
    for a in (b[name] for name in ("tcpdump", "dumpcap", "tshark", "netsniff-ng")):
        assert a.stop_signal == signal.SIGINT and a.file_format == "pcap" and a.summary and a.notes
        assert {c.name for c in a.counts} >= {"captured", "dropped"} and a.post is None
    # argus writes flows, not frames: one count, from racount after the stop.
    argus = b["argus"]
    assert argus.file_format is None and argus.post.startswith("racount ") and argus.stop_signal == signal.SIGTERM
    assert [(c.name, c.source) for c in argus.counts] == [("captured", apps.POST)]
    # testpmd writes no file: its counts are the port's statistics it prints; it polls.
    testpmd = b["testpmd"]
    assert testpmd.file_format is None and testpmd.program == "dpdk-testpmd" and testpmd.package == "dpdk-dev"
    assert [(a.layer, a.count) for a in testpmd.account] == [("DPDK port", "dropped"), ("DPDK port", "errors"),
                                                             ("mbuf pool", "nombuf"), ("socket", "tp_drops")]


def test_argv_substitutes_per_word():
    a = apps.builtin()["tcpdump"].with_command("tcpdump -i {iface} -w {out} --cpu={cpu} -G {duration} {outdir}/x")
    assert a.argv(iface="cb1c", out="/tmp/a b.pcap", cpu=1, duration_s=2.5, outdir="/t") == \
        ["tcpdump", "-i", "cb1c", "-w", "/tmp/a b.pcap", "--cpu=1", "-G", "2.5", "/t/x"]
    assert a.program == "tcpdump"
    with pytest.raises(AdapterError, match=r"\{cpu\}"):
        a.argv(iface="x", out="o", cpu=None, duration_s=1, outdir="d")


def one_count(command: str, source: str, how: str) -> apps.Adapter:
    """An adapter `p` with one count `c` (`how`: its pattern or json_path line) beside the captured
    count every adapter without a capture file needs."""
    return apps.parse(f'[p]\ncommand = "{command}"\n[p.counts.c]\nsource = "{source}"\n{how}\nmeaning = "m"\n'
                      f'[p.counts.captured]\nsource = "stderr"\npattern = \'(\\d+) captured\'\nrequired = false\n'
                      f'meaning = "m"\n', "t.toml")["p"]


def test_counts_take_the_last_match_and_commas():
    a = one_count("p -i {iface}", "stdout", "pattern = 'got (\\d[\\d,]*)'")
    assert a.read_counts("got 5\ngot 1,234\n", "", {}) == {"c": 1234}


# --- errors: one line each -----------------------------------------------------------------

BASE = """
[x]
command = "x -i {iface} -w {out}"
file_format = "pcap"
[x.counts.captured]
source = "stderr"
pattern = '(\\d+) captured'
meaning = "m"
"""


def one_line_error(text: str) -> str:
    with pytest.raises(AdapterError) as e:
        apps.parse(text, "my.toml")
    msg = str(e.value)
    assert "\n" not in msg and re.match(r"my\.toml(:\d+)?: ", msg)
    return msg


@pytest.mark.parametrize(("change", "expect"), [
    (("file_format = \"pcap\"", "colour = 1"), r"\[x\] colour: unknown key"),
    (("meaning = \"m\"", "meaning = \"m\"\nwhat = 1"), r"\[x.counts.captured\] what: unknown key"),
    (("'(\\d+) captured'", "'(\\d+ captured'"), "is not a regex"),
    (("'(\\d+) captured'", "'(\\d+) (captured)'"), "has 2 groups"),
    (("'(\\d+) captured'", "'\\d+ captured'"), "has 0 groups"),
    (("file_format", "stop = { signal = \"SIGBOGUS\" }\nfile_format"), "not a signal"),
    (("file_format", "stop = { signal = \"SIGKILL\" }\nfile_format"), "not a signal"),
    (("file_format", "stop = { grace_s = 0 }\nfile_format"), "grace_s is 0: give 0.1 to 60"),
    (("file_format", "ready = { delay_s = 61 }\nfile_format"), "delay_s is 61"),
    (("x -i {iface} -w {out}", "x -w {out}"), r"has no \{iface\}"),
    (("x -i {iface} -w {out}", "x -i {iface} -w {out} {colour}"), r"unknown field \{colour\}"),
    (("x -i {iface} -w {out}", "x -i {iface} -w {out:>3}"), "without a format"),
    (("x -i {iface} -w {out}", "x -i {iface} -w {out} '"), "cannot split"),
    (("source = \"stderr\"", "source = \"stdin\""), "use stderr, stdout, post, packet_statistics or file:TEMPLATE"),
    (("command = \"x -i {iface} -w {out}\"", "command = 3"), r"\[x\] command: is not"),
    (("meaning = \"m\"", ""), r"meaning: missing"),
    (("x -i {iface} -w {out}", "x -i {iface}"), r"needs \{out\}"),
    (("file_format", "polls = \"yes\"\nfile_format"), r"\[x\] polls: is not true or false"),
])
def test_schema_errors(change, expect):
    assert change[0] in BASE
    assert re.search(expect, one_line_error(BASE.replace(change[0], change[1], 1)))


def test_a_polling_program_is_placed_as_a_polling_backend():
    from capbench.trial.measure import program_backend

    a = apps.parse(BASE.replace("file_format", "polls = true\nfile_format", 1), "t")["x"]
    assert a.polls and program_backend(a).polls
    assert not apps.parse(BASE, "t")["x"].polls and not program_backend(apps.builtin()["tcpdump"]).polls


def test_not_toml_and_not_a_table():
    assert "not valid TOML" in one_line_error("[x\n")
    # tomllib refuses an integer of thousands of digits with a plain ValueError
    assert "not valid TOML" in one_line_error("x = " + "9" * 5000 + "\n")
    assert "is not a table" in one_line_error("x = 1\n")


def test_count_error_names_count_adapter_and_last_line():
    a = apps.builtin()["tcpdump"]
    with pytest.raises(CountError) as e:
        a.read_counts("", "tcpdump: listening on x\nsomething went wrong\n", {})
    msg = str(e.value)
    assert "\n" not in msg and "tcpdump" in msg and "'captured'" in msg and "something went wrong" in msg
    assert e.value.exit_status == 1


def test_optional_count_absent():
    counts, _ = counts_of("tshark", "100k")  # no drop line: absent means 0
    assert counts["dropped"] == 0
    a = apps.parse(BASE.replace('meaning = "m"', 'meaning = "m"\nrequired = false'), "t")["x"]
    assert a.read_counts("", "nothing", {}) == {}  # optional, absent: left out
    assert "needs required = false" in one_line_error(
        BASE.replace('meaning = "m"', 'meaning = "m"\nabsent_means_zero = true'))


def test_check_program_missing():
    a = apps.builtin()["tcpdump"].with_command("no-such-capbench-program -i {iface} -w {out}")
    with pytest.raises(AdapterError, match=r"^no-such-capbench-program is not installed: apt-get install tcpdump, "):
        a.check()
    with pytest.raises(AdapterError, match="not installed"):
        a.with_command("/nonexistent/dir/prog -i {iface} -w {out}").check()
    with pytest.raises(AdapterError, match=r"has no \{iface\}"):
        a.with_command("tcpdump -w {out}")


# --- files, specs, the registry -------------------------------------------------------------


def test_user_file_loads_and_overrides(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text(BASE.replace("[x", "[tcpdump").replace("x -i", "tcpdump -B 8192 -i"))
    reg = apps.registry([f], reserved=RESERVED)
    assert reg["tcpdump"].command == "tcpdump -B 8192 -i {iface} -w {out}"
    assert [c.name for c in reg["tcpdump"].counts] == ["captured"]
    assert "dumpcap" in reg


def test_user_file_errors_name_the_file(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text(BASE.replace("file_format", "colour = 1\nfile_format"))
    with pytest.raises(AdapterError, match=re.escape(str(f)) + r":4: \[x\] colour: unknown key"):
        apps.load_file(f)
    with pytest.raises(AdapterError, match="cannot read adapters file"):
        apps.load_file(tmp_path)  # a directory
    with pytest.raises(AdapterError):
        apps.load_file(tmp_path / "missing.toml")


def test_from_spec_three_cases():
    known = apps.builtin()
    a = apps.from_spec("tcpdump=tcpdump -i {iface} -B 4096 -w {out}", known)  # a known name
    assert a.name == "tcpdump" and "-B 4096" in a.command and a.counts == known["tcpdump"].counts
    b = apps.from_spec("big=/usr/sbin/tcpdump -i {iface} -B 65536 -w {out}", known)  # its program's adapter
    assert b.name == "big" and b.counts == known["tcpdump"].counts and b.ready_pattern == "listening on"
    c = apps.from_spec("mine=mycap --dev {iface} --file {out}", known)  # generic
    assert c.counts == () and c.file_format == "pcap" and c.stop_signal == signal.SIGINT and c.stop_grace_s == 5
    with pytest.raises(AdapterError, match=r"^capbench cannot count what mine captured: give \{out\}"):
        apps.from_spec("mine=mycap --dev {iface}", known)
    for bad in ("mine", "=tcpdump -i {iface}", "mine=", "mine=mycap -w {out}"):
        with pytest.raises(AdapterError):
            apps.from_spec(bad, known)


def test_registry_refuses_a_backend_name(tmp_path):
    with pytest.raises(AdapterError, match="'pcap' has the name of a capbench-cap backend"):
        apps.registry(specs=["pcap=tcpdump -i {iface} -w {out}"], reserved=RESERVED)


def test_file_counts_read_the_named_file():
    a = one_count("s -i {iface} -l {outdir}", "file:{outdir}/eve.json", 'json_path = "stats.capture.kernel_packets"')
    assert a.file_paths(iface="i", out="o", cpu=None, duration_s=1, outdir="/d") == {"{outdir}/eve.json": "/d/eve.json"}
    with pytest.raises(CountError, match="was not read"):
        a.read_counts("", "", {})


# --- docs/apps.md's worked examples ---------------------------------------------------------

def doc_example(name: str) -> apps.Adapter:
    text = (ROOT / "docs" / "apps.md").read_text()
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if b.startswith(f"[{name}]")]
    assert len(blocks) == 1
    return blocks[0]


def test_docs_suricata_example(tmp_path):
    f = tmp_path / "suricata.toml"
    f.write_text(doc_example("suricata"))
    a = apps.load_file(f)["suricata"]
    eve = "\n".join([
        '{"timestamp":"2025-01-01T00:00:01","event_type":"stats","stats":{"uptime":1,"capture":'
        '{"kernel_packets":1000,"kernel_drops":0},"decoder":{"pkts":1000}}}',
        '{"timestamp":"2025-01-01T00:00:01","event_type":"flow","flow":{"pkts_toserver":3}}',
        '{"timestamp":"2025-01-01T00:00:02","event_type":"stats","stats":{"uptime":2,"capture":'
        '{"kernel_packets":250000,"kernel_drops":1234},"decoder":{"pkts":248766}}}',
    ])
    files = {t: eve for t in a.file_paths(iface="i", out="o", cpu=1, duration_s=2, outdir="/d")}
    assert a.read_counts("", "", files) == {"captured": 248766, "seen": 250000, "dropped": 1234}


def test_docs_zeek_example(tmp_path):
    f = tmp_path / "zeek.toml"
    f.write_text(doc_example("zeek"))
    a = apps.load_file(f)["zeek"]
    stderr = "listening on cb1c\n\n1488095 packets received on interface cb1c, 12345 (0.82%) dropped\n"
    assert a.read_counts("", stderr, {}) == {"captured": 1488095, "dropped": 12345}


def test_an_adapter_must_say_what_it_captured(tmp_path):
    f = tmp_path / "blind.toml"
    f.write_text('[blind]\ncommand = "tcpdump -i {iface}"\n[blind.counts.dropped]\nsource = "stderr"\n'
                 'pattern = \'(\\d+) dropped\'\nmeaning = "drops"\n')
    with pytest.raises(apps.AdapterError, match="a count named 'captured' or file_format"):
        apps.load_file(f)


def test_a_post_command_feeds_the_counts_that_read_it(tmp_path):
    a = apps.builtin()["argus"]
    assert apps.post_argv(a, iface="i", out="/x/o", cpu=None, duration_s=1, outdir="/d") == ["racount", "-r", "/x/o"]
    racount = ("racount   records     total_pkts     src_pkts       dst_pkts       total_bytes\n"
               "    sum   9           20011          20011          0              1200942\n")
    assert a.read_counts("", "", {apps.POST: racount}) == {"captured": 20011}
    with pytest.raises(CountError, match="captured"):
        a.read_counts("", "", {apps.POST: "racount: no records\n"})


def test_a_count_of_the_post_command_needs_one():
    with pytest.raises(AdapterError, match="no post command"):
        apps.parse('[p]\ncommand = "p -i {iface}"\n[p.counts.captured]\nsource = "post"\npattern = \'(\\d+)\'\n'
                   'meaning = "m"\n', "t.toml")
