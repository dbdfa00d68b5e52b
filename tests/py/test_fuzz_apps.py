"""Fuzz: adapters files (`capbench run --apps-file FILE`, docs/apps.md), as bytes, as text and as
generated TOML of the keys an adapter has. Each input ends in the adapters it holds or one
UsageError line, never another exception; an accepted adapter's command, post command and count
files can be built, and each is a command line the kernel takes (inputs.check_words)."""

from pathlib import Path

from capbench import inputs
from capbench.errors import UsageError
from capbench.trial import apps
from fuzzing import clean, clean_file, examples, scratch_dir
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_fuzz_campaign import toml_value

DIR = scratch_dir("capbench-fuzz-apps-")
BUILTIN = (Path(apps.__file__).parent / "apps.toml").read_bytes()
VALUES = {"iface": "cbabcdefc", "out": "/tmp/capbench-trial-1/mydump-0.pcap", "cpu": 1, "duration_s": 10.0,
          "outdir": "/tmp/capbench-trial-1"}


def load_file(data: bytes) -> "dict[str, apps.Adapter] | UsageError":
    return clean_file(DIR / "apps.toml", data, apps.load_file)


def assert_usable(adapters) -> None:
    """What an accepted file holds: adapters whose commands can be built and started."""
    if isinstance(adapters, UsageError):
        assert isinstance(adapters, apps.AdapterError)  # the adapters' own kind of usage error
        return
    for a in adapters.values():
        inputs.check_words(a.argv(**VALUES), a.name)
        post = apps.post_argv(a, **VALUES)
        if post is not None:
            inputs.check_words(post, a.name)
        inputs.check_words(list(a.file_paths(**VALUES).values()), a.name)


@given(st.binary(max_size=400))
@example(BUILTIN)
@example(b'[m]\ncommand = "tcpdump -i {iface} -w {out} \\u0000"\nfile_format = "pcap"\n')
@example(b'[m]\ncommand = "tcpdump -i {iface} -w {out} ' + b"A" * 200_000 + b'"\nfile_format = "pcap"\n')
@example(b'[m]\ncommand = "tcpdump -i {iface} -w {out}"\nfile_format = "pcap"\npost = "x \\u0000"\n')
@example(b"\xff")
@example(b"a = " + b"{a = " * 3000)
def test_fuzz_apps_bytes(data):
    assert_usable(load_file(data))


@given(st.text(max_size=400))
def test_fuzz_apps_text(text):
    assert_usable(clean(lambda: apps.parse(text, "apps.toml")))


TEMPLATE = st.one_of(
    st.sampled_from(["tcpdump -i {iface} -w {out}", "dumpcap -i {iface} -w {out} -a duration:{duration}",
                     "prog -i {iface} --cpu {cpu} -d {outdir}", "tcpdump -w {out}", "{bogus} -i {iface}",
                     "x -i {iface} {out!r}", "x -i {iface} {{}}", "x -i {iface} '", "", "x -i {iface} \0",
                     "x -i {iface} " + "A" * 5000, "racount -r {out}", "x -i {iface} {"]),
    st.text(max_size=30))
SOURCE = st.sampled_from(["stderr", "stdout", "post", "file:{outdir}/eve.json", "file:{nope}", "file:", "file:\0",
                          "elsewhere"])
COUNT = st.fixed_dictionaries({}, optional={
    "source": st.one_of(SOURCE, st.integers()), "pattern": st.sampled_from([r"^(\d+) captured", "(", "(a)(b)", "x"]),
    "json_path": st.sampled_from(["stats.captured", "", "a..b"]), "meaning": st.text(max_size=10),
    "required": st.one_of(st.booleans(), st.integers()), "absent_means_zero": st.booleans(), "nope": st.just(1)})
ADAPTER = st.fixed_dictionaries({}, optional={
    "command": st.one_of(TEMPLATE, st.integers()), "summary": st.text(max_size=10), "package": st.text(max_size=10),
    "stop": st.fixed_dictionaries({}, optional={"signal": st.sampled_from(["SIGINT", "TERM", "SIGKILL", "9", "x\0"]),
                                                "grace_s": st.one_of(st.floats(), st.integers(-1, 100))}),
    "ready": st.fixed_dictionaries({}, optional={"pattern": st.sampled_from(["listening", "(", "\0"]),
                                                 "stream": st.sampled_from(["stderr", "stdout", "x"]),
                                                 "delay_s": st.floats()}),
    "settle_s": st.one_of(st.floats(), st.booleans()), "file_format": st.sampled_from(["pcap", "pcapng", ""]),
    "notes": st.text(max_size=10), "post": TEMPLATE, "counts": st.dictionaries(
        st.sampled_from(["captured", "dropped", "bad name", "x\0"]), COUNT, max_size=2)})


def inline(value) -> str:
    """A TOML value; a table inline, as TOML writes one within a line."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_value(k)} = {inline(v)}" for k, v in value.items()) + "}"
    return toml_value(value)


@given(st.dictionaries(st.sampled_from(["mydump", "tcpdump", "bad name", "x\0", "a" * 41]), ADAPTER, max_size=2))
@example({"m": {"command": "tcpdump -i {iface} -w {out} \0", "file_format": "pcap"}})
@example({"m": {"command": "tcpdump -i {iface} -w {out}", "file_format": "pcap", "post": "racount \0",
                "counts": {"x": {"source": "post", "pattern": r"(\d+)", "meaning": "m"}}}})
@example({"m": {"command": "tcpdump -i {iface}", "counts": {"captured": {
    "source": "file:{outdir}/" + "A" * 5000, "pattern": r"(\d+)", "meaning": "m"}}}})
@settings(max_examples=examples(0.3))  # a generated file is written and read per example: 30 ms here
def test_fuzz_apps_tables(adapters):
    text = "".join(f"[{toml_value(name)}]\n" + "".join(f"{k} = {inline(v)}\n" for k, v in body.items())
                   for name, body in adapters.items())
    assert_usable(load_file(text.encode()))


def test_the_builtin_adapters_are_accepted():
    assert set(load_file(BUILTIN)) == set(apps.builtin())
