"""capbench.declared: the registry the C programs declare (--describe), read, checked and complete."""

from __future__ import annotations

import copy
import json
import os
import re
import stat
import subprocess
import sys

import pytest
from capbench import declared
from capbench.cli.parser import build_parser
from capbench.testbed import preflight
from capbench.binaries import PROGRAMS, find_program
from capbench.errors import UsageError


def sample_cap() -> dict:
    """A capbench-cap --describe document in the agreed shape (docs/programs.md, "--describe")."""
    opt = {"name": "--block-size", "type": "bytes", "min": 4096, "max": 1 << 30, "default": 1 << 20,
           "help": "ring block size"}
    caps = {"own_xdp": False, "kernel_counter": False, "xsk_stats": False, "queue_count": True,
            "kernel_stats": "packet_statistics", "clock": "kernel", "writes_pcap": True, "workers": False,
            "queues": False, "needs": ["packet_socket", "tpacket_v3"]}
    ring = {"count_option": "--block-count", "unit_bytes": 1 << 20, "unit_option": "--block-size",
            "min_unit_bytes": 4096, "power_of_two": False, "min": 1, "max": 65536, "same_as_count": []}
    xdp_caps = dict(caps, own_xdp=True, kernel_counter=True, queue_count=False, kernel_stats="xdp_program",
                    writes_pcap=False, needs=["xdp_link"])
    return {
        "program": "capbench-cap", "describe_version": 1,
        "backends": [
            {"name": "afp-v3", "summary": "TPACKET_V3", "seed": "szedata2", "options": [opt],
             "capabilities": caps, "ring": ring},
            {"name": "xdp", "summary": "the ceiling", "seed": "the physical limit", "options": [],
             "capabilities": xdp_caps, "ring": None},
        ],
        "common_options": [{"name": "--cpu", "type": "count", "default": None, "help": "CPU"}],
        "app_loads": [{"name": "touch", "help": "read the stamp"}, {"name": "none", "help": "count only"},
                      {"name": "zlib", "param": "N", "min": 0, "max": 9, "help": "compress"},
                      {"name": "spin", "param": "NS", "min": 1, "max": 1000000000, "help": "spin"}],
        "default_backend": "afp-v3", "default_app_load": "touch",
    }


def read_cap(doc: dict) -> declared.CapDeclaration:
    return declared.CapDeclaration.read(doc, lambda why: declared.DescribeError(f"{why}: rebuild with make"))


def test_a_document_becomes_typed_frozen_views():
    d = read_cap(sample_cap())
    assert d.backend_names == ("afp-v3", "xdp")
    v3 = d.backend("afp-v3")
    assert (v3.queue_count, v3.own_xdp, v3.kernel_stats, v3.needs) == (True, False, "packet_statistics",
                                                                        ("packet_socket", "tpacket_v3"))
    assert v3.option("--block-size").default == 1 << 20 and v3.option("--nothing") is None
    assert d.backend("xdp").ring is None and d.backend("xdp").ring_args(1 << 20) == ()
    with pytest.raises(AttributeError):
        v3.name = "x"  # frozen
    with pytest.raises(UsageError, match="unknown backend 'pfring': use afp-v3, xdp"):
        d.backend("pfring")


@pytest.mark.parametrize("change, words", [
    (lambda d: d.pop("backends"), ["no 'backends'"]),
    (lambda d: d.update(describe_version=2), ["describe_version is 2", "reads 1"]),
    (lambda d: d.update(program="capbench-gen"), ["capbench-gen"]),
    (lambda d: d["backends"][0].pop("summary"), ["backends[0]", "summary"]),
    (lambda d: d["backends"][0]["capabilities"].update(own_xdp="no"), ["own_xdp", "true or false"]),
    (lambda d: d["backends"][0].update(capabilities=None), ["capabilities", "not an object"]),
    (lambda d: d["backends"][1].pop("ring"), ["backends[1]", "'ring'"]),
    (lambda d: d["backends"][0]["capabilities"].update(needs="packet_socket"), ["needs", "list of strings"]),
    (lambda d: d["backends"].append(copy.deepcopy(d["backends"][0])), ["'afp-v3' twice"]),
    (lambda d: d.update(default_backend="pfring"), ["default backend"]),
    (lambda d: d.update(default_app_load="spin:0"), ["default app load"]),
    (lambda d: d["backends"][0]["ring"].update(unit_bytes=True), ["unit_bytes"]),
    (lambda d: d["app_loads"][2].pop("max"), ["min and max"]),
    (lambda d: d["backends"][0]["capabilities"].update(own_xdp_unless="block-size=af_packet"),
     ["own_xdp_unless", "no choice of its options"]),
])
def test_a_wrong_document_is_one_line_naming_the_field(change, words):
    doc = sample_cap()
    change(doc)
    with pytest.raises(declared.DescribeError) as e:
        read_cap(doc)
    line = str(e.value)
    assert "\n" not in line and line.endswith("rebuild with make")
    for w in words:
        assert w in line, (w, line)


# capbench run --ring B as trial.ring_args turned it into options before the backends declared their
# ring (written from that function, for these sizes): the declared ring specs must give the same.
SIZES = (0, 4096, 5000, 65536, 256 << 10, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 << 20, 32 << 20, 64 << 20,
         (128 << 20) + 12345, 1 << 30)
OLD_RING_ARGS = {
    "pcap": [()] + [("--buffer-size", str(n)) for n in SIZES[1:]],
    "raw": [()] + [("--buffer-size", str(n)) for n in SIZES[1:]],
    "afp-v2": [(), *(("--frame-count", c) for c in ("2", "2", "32", "128", "511", "512", "512", "1536", "16384",
                                                    "32768", "65542", "524288"))],
    "afp-v3": [(), *(("--block-size", s, "--block-count", c) for s, c in (
        ("4096", "1"), ("4096", "1"), ("65536", "1"), ("262144", "1"), ("524288", "1"), ("1048576", "1"),
        ("1048576", "1"), ("1048576", "3"), ("1048576", "32"), ("1048576", "64"), ("1048576", "128"),
        ("1048576", "1024")))],
    "afxdp": [(), *(("--ring-size", c, "--frame-count", c) for c in (
        "64", "64", "64", "128", "256", "512", "512", "1024", "16384", "32768", "65536", "524288"))],
    "xdp": [()] * len(SIZES),
}
OLD_RING_ARGS["fanout"] = OLD_RING_ARGS["afp-v3"]
# The backends from before the declarations: a backend added since has no old table or set to
# match, and adding one takes its file, a registry line and meson (docs/architecture.md), not this test.
OLD_BACKENDS = frozenset(OLD_RING_ARGS)


@pytest.mark.parametrize("backend", sorted(OLD_RING_ARGS))
def test_declared_rings_give_the_options_ring_args_gave(backend):
    for size, old in zip(SIZES, OLD_RING_ARGS[backend], strict=True):
        assert declared.ring_args(backend, size) == old, (backend, size)
        assert declared.backend(backend).ring_args(size) == old, (backend, size)


def test_every_declared_backend_is_covered_by_the_old_table_and_preflight():
    """The registry is complete: every backend of the ring table above is still declared, every
    need a declared backend names has a check in preflight, and preflight checks nothing no
    backend can name."""
    assert OLD_BACKENDS <= set(declared.backend_names())
    assert set(preflight.COVERS) <= set(preflight.NEED_CHECKS)
    for b in declared.backends():
        assert b.needs and set(b.needs) <= set(preflight.NEED_CHECKS), b.name
        assert b.summary and b.seed and "\n" not in b.summary
        ok, why = preflight.backend_status(b.name)
        assert why and why != "unknown backend"
        # Every option a ring spec sets is one of the backend's own options.
        if b.ring is not None:
            for o in (b.ring.count_option, b.ring.unit_option, *b.ring.same_as_count):
                assert o is None or b.option(o) is not None, (b.name, o)


def test_capabilities_say_what_the_old_sets_said():
    """trial.py's sets, from before the declarations, as the capabilities now say them."""
    def where(test):
        return set(declared.names_where(test)) & OLD_BACKENDS
    assert set(where(lambda b: b.own_xdp)) == {"afxdp", "xdp"}
    assert set(where(lambda b: b.xsk_stats)) == {"afxdp"}
    assert set(where(lambda b: b.queues)) == {"afxdp"}
    assert set(where(lambda b: b.queue_count)) == {"raw", "afp-v2", "afp-v3", "fanout"}
    assert set(where(lambda b: b.kernel_counter)) == {"xdp"}
    # The engines in the order a run asks the kernel for them (preflight.engine_here): fastest first.
    assert declared.engine_names() == ("xdp", "xdploop", "afpacket")
    assert [declared.gen().engine(e).refusals for e in declared.engine_names()] == ["lost", "lost", "retried"]
    assert declared.cap().default_app_load == "touch"


# The app-load grammar as campaign.APP_LOAD_RE checked it before the declarations.
OLD_APP_LOAD_RE = re.compile(r"^(touch|none|copy|zlib:[0-9]|spin:[1-9]\d{0,8}|spin:1000000000)$")


@pytest.mark.parametrize("text", ["touch", "none", "copy", "zlib:0", "zlib:9", "zlib:10", "zlib:09", "zlib:",
                                  "zlib", "spin:1", "spin:500", "spin:0", "spin:1000000000", "spin:1000000001",
                                  "spin:0500", "spin:+5", "spin: 5", "spin:５", "spin", "heavy", "", "touch ",
                                  "Touch", "copy:1", "none:0", "spin:99999999999999999999999"])
def test_app_loads_are_read_as_before(text):
    ok = bool(OLD_APP_LOAD_RE.match(text))
    if ok:
        assert declared.check_app_load(text) == text
    else:
        with pytest.raises(UsageError, match="cannot read app load"):
            declared.check_app_load(text)


def test_the_app_load_error_lists_the_declared_forms():
    with pytest.raises(UsageError) as e:
        declared.check_app_load("heavy")
    assert "zlib:N (0 to 9)" in str(e.value) and "spin:NS (1 to 1000000000)" in str(e.value)


def test_describe_runs_once_per_program(fake_build):
    declared._cap_at.cache_clear()
    first = declared.cap()
    assert declared.cap() is first and declared._cap_at.cache_info().misses == 1


def old_program(tmp_path, monkeypatch, program: str, script: str) -> None:
    """A build directory whose `program` is `script` (the others: the real build's)."""
    build = tmp_path / "old-build"
    build.mkdir()
    for name in PROGRAMS:
        path = build / name
        if name == program:
            path.write_text(f"#!{sys.executable}\n{script}")
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        else:
            path.symlink_to(find_program(name))
    monkeypatch.setenv("CAPBENCH_BUILD_DIR", str(build))


TOO_OLD = "import sys\nprint('capbench-cap: unknown option --describe', file=sys.stderr)\nsys.exit(2)\n"


def test_a_program_too_old_to_describe_itself_says_rebuild(tmp_path, monkeypatch):
    old_program(tmp_path, monkeypatch, "capbench-cap", TOO_OLD)
    with pytest.raises(UsageError) as e:
        declared.backend_names()
    line = str(e.value)
    assert "unknown option --describe" in line and line.endswith("rebuild with make") and "\n" not in line


@pytest.mark.parametrize("script", [
    TOO_OLD,
    "print('not json')\n",
    "import json\nprint(json.dumps({'program': 'capbench-cap', 'describe_version': 0}))\n",
])
def test_capbench_backends_with_an_old_program_is_one_line_exit_2(tmp_path, monkeypatch, script):
    old_program(tmp_path, monkeypatch, "capbench-cap", script)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    p = subprocess.run([sys.executable, "-m", "capbench", "backends"], capture_output=True, text=True, env=env,
                       check=False)
    assert p.returncode == 2, p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "rebuild with make" in lines[0] and "Traceback" not in p.stderr
    assert p.stdout == ""


def test_help_texts_come_from_the_declarations():
    text = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    flat = " ".join(text.split())
    for b in declared.backends():
        assert b.name in flat
    for e in declared.gen().engines:
        assert e.name in flat
    for a in declared.cap().app_loads:
        assert a.form in flat
    assert "--block-count B / 1 MiB" in flat and "--ring-size B / 2 KiB (a power of two)" in flat


def test_help_works_without_the_programs(tmp_path, monkeypatch):
    """--help (and `capbench report`) need no build: the lists then point at make."""
    old_program(tmp_path, monkeypatch, "capbench-cap", TOO_OLD)
    text = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert "make" in text


def test_describe_is_json_on_stdout():
    for program in ("capbench-cap", "capbench-gen"):
        p = subprocess.run([str(find_program(program)), "--describe"], capture_output=True, text=True, check=True)
        assert json.loads(p.stdout)["program"] == program


def test_the_named_size_lists_are_the_generators():
    """`--sizes seed` runs seed 000's lengths one trial each; `capbench-gen --size seed` cycles the
    same lengths in one trial. Each side keeps the list for its own use (Python needs it to build
    a campaign before any program runs): they must be the same list."""
    from capbench.rates import NAMED_SIZES

    declared_lists = {p.name: p.lengths for p in declared.gen().size_profiles if p.lengths}
    assert declared_lists == NAMED_SIZES


def test_each_backend_declares_its_loss_account():
    """--describe carries each backend's account rows (src/cap/account.h); a document without them
    (before issue 29) reads as not declared."""
    for b in declared.backends():
        assert b.account is not None, b.name
        assert all(a.layer and a.counter and a.explains for a in b.account), b.name
    pcap = declared.backend("pcap")
    assert [(a.layer, a.counter, a.cross_check) for a in pcap.account] == [
        ("socket", "pcap_stats ps_drop", False), ("NIC", "pcap_stats ps_ifdrop", True)]
    assert read_cap(sample_cap()).backend(read_cap(sample_cap()).backend_names[0]).account is None


def test_an_option_value_that_attaches_no_xdp_program_is_the_declarations():
    # dpdk's net_af_packet (--dpdk-driver af_packet) leaves the interface to the test bed's counter:
    # the backend as it runs with that option has no XDP program of its own, so several processes
    # can share the interface; with any other value (or none) it has.
    dpdk = declared.backend("dpdk")
    assert dpdk.own_xdp and dpdk.own_xdp_unless == ("--dpdk-driver", "af_packet")
    assert not dpdk.ran_with(["--dpdk-driver", "af_packet"]).own_xdp
    assert not dpdk.ran_with(["--ring-size", "512", "--dpdk-driver=af_packet"]).own_xdp
    assert dpdk.ran_with(["--dpdk-driver", "af_xdp"]).own_xdp and dpdk.ran_with([]).own_xdp
    assert declared.backend("afxdp").ran_with(["--dpdk-driver", "af_packet"]).own_xdp
    assert "dpdk with --dpdk-driver af_packet" in declared.shared_interface_backends()
