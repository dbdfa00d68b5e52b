"""Fuzz: topology files (`capbench run --topology FILE`, docs/topology.md), as bytes, as text and as
generated TOML of the tables and keys a topology has. Each input ends in a checked Topology or one
UsageError line, never another exception; what a Topology holds is what its readers can use: every
word it hands to a command is one a command can take."""

from capbench import inputs
from capbench.errors import UsageError
from capbench.remote import topology
from fuzzing import clean, clean_file, examples, scratch_dir
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_fuzz_campaign import toml_value

DIR = scratch_dir("capbench-fuzz-topology-")
EXAMPLE = b"""[hosts.s1]
ssh = "root@s1"
[generator]
host = "local"
iface = "eth1"
cpu = 2
[[sensor]]
host = "s1"
iface = "eth2"
backends = ["pcap", "afp-v3"]
"""


def read_file(data: bytes) -> "topology.Topology | UsageError":
    return clean_file(DIR / "t.toml", data, topology.read)


def assert_usable(t) -> None:
    """What an accepted topology holds: roles on hosts it names, commands that can start."""
    if isinstance(t, UsageError):
        return
    assert t.generator.host in t.hosts and t.sensors and all(s.host in t.hosts for s in t.sensors)
    for host in t.hosts.values():
        inputs.check_words(host.capbench, "capbench")
        inputs.check_words([*host.ssh_options, *([host.ssh] if host.ssh else []),
                            *([host.ssh_config] if host.ssh_config else []),
                            *([host.build_dir] if host.build_dir else [])], "ssh")
    for role in (t.generator, *t.sensors):
        assert 0 < len(role.iface) < topology.IFNAMSIZ and "\0" not in role.iface


@given(st.binary(max_size=400))
@example(EXAMPLE)
@example(EXAMPLE.replace(b'ssh = "root@s1"', b'ssh = "root@s1"\ncapbench = "capbench \\u0000"'))
@example(EXAMPLE.replace(b'ssh = "root@s1"', b'ssh = "root@s1"\nssh_config = "/etc/\\u0000"'))
@example(EXAMPLE.replace(b'ssh = "root@s1"', b'ssh = "root@s1"\nssh_config = "/dev/zero"'))
@example(EXAMPLE.replace(b'ssh = "root@s1"', b'ssh = "root@s1"\ncapbench = "' + b"A" * 200_000 + b'"'))
@example(EXAMPLE.replace(b'ssh = "root@s1"', b'ssh = "root@s1"\nssh_options = ["Port=' + b"2" * 5000 + b'"]'))
@example(EXAMPLE.replace(b'ssh = "root@s1"', b'ssh = "root@' + b"s" * 5000 + b'"'))
@example(b"\xff")
@example(b"a = " + b"[" * 5000)
def test_fuzz_topology_bytes(data):
    assert_usable(read_file(data))


@given(st.text(max_size=400))
def test_fuzz_topology_text(text):
    assert_usable(clean(lambda: topology.parse(text, "t.toml")))


# Values a key may be given: the right kind, near its bounds, hostile, and every other kind.
WORD = st.sampled_from(["local", "s1", "s2", "gen1", "root@s1", "eth1", "eth2", "lo", "a" * 16, "x\0y", "", "-oX",
                        "/opt/capbench/build", "/etc/ssh/ssh_config", "/dev/zero", "/nonexistent", "Port=2222",
                        "ProxyCommand=sh", "Port=" + "2" * 5000, "capbench", "python -m capbench", "capbench \0", "A" * 5000, "ptp"])
VALUE = st.one_of(WORD, st.integers(-2, 5000), st.booleans(), st.floats(), st.text(max_size=12),
                  st.lists(st.one_of(WORD, st.integers(-1, 3)), max_size=3))
HOST = st.fixed_dictionaries({}, optional={k: VALUE for k in topology.HOST_KEYS} | {
    "ssh": st.sampled_from(["root@s1", "s2", "-oProxyCommand=x", "a b", "x\0"]), "local": st.booleans()})
ROLE = st.fixed_dictionaries({}, optional={k: VALUE for k in (*topology.GENERATOR_KEYS, *topology.SENSOR_KEYS)} | {
    "host": st.sampled_from(["local", "s1", "s2", "nope"]), "iface": WORD})


def tables(draw_hosts, generator, sensors, clocks, tap) -> str:
    text = "".join(f"[hosts.{toml_value(name)}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in h.items())
                   for name, h in draw_hosts.items())
    if generator is not None:
        text += "[generator]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in generator.items())
    text += "".join("[[sensor]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in s.items()) for s in sensors)
    if clocks is not None:
        text += f"[clocks]\nsynchronized = {toml_value(clocks)}\n"
    if tap is not None:
        text += "[tap]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in tap.items())
    return text


@given(st.dictionaries(st.sampled_from(["local", "s1", "s2", "bad name", "x\0"]), HOST, max_size=3),
       st.one_of(st.none(), ROLE), st.lists(ROLE, max_size=3), st.one_of(st.none(), VALUE),
       st.one_of(st.none(), st.fixed_dictionaries({}, optional={"iface": WORD, "clone_to": VALUE})))
@example({"s1": {"ssh": "root@s1", "capbench": "capbench \0"}}, {"host": "local", "iface": "eth1"},
         [{"host": "s1", "iface": "eth2", "backends": ["pcap"]}], None, None)
@example({"s1": {"ssh": "root@s1"}}, {"host": "local", "iface": "eth1"},
         [{"host": "s1", "iface": "eth2", "backend": "pcap"}], "ptp", {"iface": "t0", "clone_to": ["t1"]})
@settings(max_examples=examples(0.3))  # a generated file is written and read per example: 30 ms here
def test_fuzz_topology_tables(hosts, generator, sensors, clocks, tap):
    assert_usable(read_file(tables(hosts, generator, sensors, clocks, tap).encode()))


def test_the_example_is_accepted():
    assert not isinstance(read_file(EXAMPLE), UsageError)
