"""Programs as backends: how to start a capture program, how to stop it and how to read what it
says it counted (docs/apps.md).

An adapter is data. The built-in ones are `apps.toml` (package data, beside this module); a user
adds or overrides adapters with a TOML file of the same schema (`--apps-file`) or one template
on the command line (`--app 'NAME=TEMPLATE'`). Every problem with an adapter, a template or a
missing program is one line (AdapterError, exit status 2); a count that a real run's output does
not hold is a CountError (exit status 1).

A template is split like a shell line (shlex), then each word gets the fields substituted on its
own, so a path with spaces stays one word and nothing is ever run through a shell.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import shutil
import signal
import string
import threading
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from capbench import inputs
from capbench.errors import RunError, UsageError
from capbench.testbed.procs import Lines
from capbench.trial import record

FIELDS = ("iface", "out", "cpu", "duration", "outdir")  # what a template may name
# A word a template's reading (shlex) takes as it is: shlex.quote's safe characters and a field's
# braces, written unquoted.
TEMPLATE_WORD_RE = re.compile(r"[\w@%+=:,./{}-]+")
STREAMS = ("stderr", "stdout")
POST = "post"  # a count's source: the stdout of the adapter's post command, run after the stop
# A count's source: the PACKET_STATISTICS of the program's packet sockets, which capbench reads
# through copies of them just before the stop (program_run.packet_statistics), as the lines
# "tp_packets N" and "tp_drops N" (sums over its sockets). The kernel zeroes them on every read:
# only for a program that never reads them itself (DPDK 22.11's net_af_packet).
PACKET_STATISTICS = "packet_statistics"
FILE_FORMATS = ("pcap",)  # pcap or pcapng: capbench counts the frames in it
GRACE_S = (0.1, 60.0)
DELAY_S = (0.0, 60.0)
APPS_FILE_MAX_BYTES = 1 * inputs.MIB
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}")
LAST_LINE_CHARS = 200
COUNTER_BITS = (32, 64)  # a count's `bits`: the width of the program's counter (tcpdump's are u_int)
# A program with no adapter (from_spec's third case): how it is stopped and waited for.
GENERIC_STOP = signal.SIGINT
GENERIC_GRACE_S = 5.0
GENERIC_READY_DELAY_S = 1.0  # no ready line to wait for: a second, more than any measured start
GENERIC_SETTLE_S = 1.5  # libpcap's 1000 ms buffer timeout, and a margin


class AdapterError(UsageError):
    """A bad adapter, template or adapters file, or a program that is not installed."""


class CountError(RunError):
    """A count's pattern found nothing in a real run's output."""


# --- templates -------------------------------------------------------------------------


def _template_fields(template: str, what: str, knobs: Collection[str] = ()) -> tuple[list[str], set[str]]:
    """The words of `template` and the fields they name (FIELDS, and the adapter's `knobs`);
    AdapterError for what cannot be a template."""
    try:
        words = inputs.command_words(template, what)  # no NUL byte, no word or command too long to start
    except ValueError as e:
        raise AdapterError(f"{what}: cannot split {template!r}: {e}") from None
    except UsageError as e:
        raise AdapterError(str(e)) from None
    if not words:
        raise AdapterError(f"{what} is empty: give the program and its options")
    names: set[str] = set()
    for word in words:
        try:
            parsed = list(string.Formatter().parse(word))
        except ValueError as e:
            raise AdapterError(f"{what}: cannot read {word!r}: {e} (write a literal brace as {{{{ or }}}})") from None
        for _, name, spec, conversion in parsed:
            if name is None:
                continue
            if name not in FIELDS and name not in knobs:
                raise AdapterError(f"{what}: unknown field {{{name}}}: use "
                                   f"{', '.join('{' + f + '}' for f in (*FIELDS, *knobs))}")
            if spec or conversion:
                raise AdapterError(f"{what}: write {{{name}}} alone, without a format or conversion")
            names.add(name)
    return words, names


def _check_command(command: str, what: str, knobs: Collection[str] = ()) -> tuple[list[str], set[str]]:
    words, names = _template_fields(command, what, knobs)
    if "iface" not in names:
        raise AdapterError(f"{what} has no {{iface}}: the program must capture on the interface capbench gives")
    return words, names


def _substitute(words: Sequence[str], values: Mapping[str, Any], what: str) -> list[str]:
    try:
        return [w.format_map(values) for w in words]
    except KeyError as e:
        raise AdapterError(f"{what} names {{{e.args[0]}}}, which this run does not give") from None


def _values(*, iface: str, out: str, cpu: int | None, duration_s: float, outdir: str) -> dict[str, Any]:
    values = {"iface": iface, "out": out, "duration": f"{duration_s:g}", "outdir": outdir}
    if cpu is not None:
        values["cpu"] = cpu
    return values


# --- knobs ---------------------------------------------------------------------------------

KNOB_VALUE_RE = re.compile(r"[A-Za-z0-9._:+-]{1,64}")  # one word of the command, never an option of its own


@dataclass(frozen=True)
class AdapterKnob:
    """A setting of the program that changes how it loses (docs/apps.md, "Its knobs"): a field of
    its command template ({buffer} in tcpdump's `-B {buffer}`), the values a search tries, the one
    it runs with when not set, and the layers of its account it governs. `capbench run --vary
    PROGRAM:NAME=V1,V2` and `capbench tune` vary it (tune.knobs)."""

    name: str
    candidates: tuple[str, ...]
    default: str
    governs: tuple[str, ...] = ()
    meaning: str = ""

    def check(self, value: str, what: str) -> str:
        """`value` if it can be the field's word: letters, digits and . _ : + - (not starting with -)."""
        if not KNOB_VALUE_RE.fullmatch(value) or value.startswith("-"):
            raise AdapterError(f"{what} {value!r}: a knob's value is one word of letters, digits and . _ : + -, "
                               f"such as {self.candidates[0] if self.candidates else self.default}")
        return value


# --- the loss account ------------------------------------------------------------------


@dataclass(frozen=True)
class AccountRow:
    """One row of the program's loss account (docs/apps.md, "Its loss account"), as capbench-cap's
    backends declare theirs in C: the layer where the program loses frames, the counter that says
    so, the sentence that explains it, and which of the program's counts holds its packets.
    `cross_check`: the layer is before the program's hand-over and capbench reads it from its own
    counter too (the NIC's): shown beside that layer, never added to the account."""

    layer: str
    counter: str
    explains: str
    count: str  # the name of one of the adapter's counts
    cross_check: bool = False


# An adapter that declares no account: its 'dropped' count, when it has one, is the socket layer's
# (what every libpcap program prints: ps_drop, PACKET_STATISTICS tp_drops).
DEFAULT_DROP_COUNT = "dropped"


def default_account(name: str) -> tuple[AccountRow, ...]:
    """The account of an adapter that declares none but has a 'dropped' count."""
    return (AccountRow(layer="socket", counter=record.PROGRAM_SOCKET_COUNTER.format(backend=name),
                       explains="the program's own report of the kernel's drops at its socket",
                       count=DEFAULT_DROP_COUNT),)


def account_rows(account: Sequence[AccountRow], counts: Mapping[str, int]) -> list[dict[str, Any]]:
    """The rows with their packets from the program's `counts` (a count it did not print: 0), in
    the shape of capbench-cap's summary `account`."""
    return [{"layer": a.layer, "counter": a.counter, "packets": int(counts.get(a.count, 0)),
             **({"cross_check": True} if a.cross_check else {})} for a in account]


# --- counts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    """One counter the program reports (docs/apps.md, "Counts")."""

    name: str  # captured, dropped, seen, ifdropped, or any other name
    source: str  # stderr | stdout | post | packet_statistics | file:TEMPLATE
    pattern: str | None  # a regex with one group capturing the number; the last match counts
    json_path: str | None  # or a dotted path into JSON Lines; the last line that has it counts
    meaning: str  # one line: what it counts and what it misses
    required: bool = True  # False: some versions print it only when non-zero
    absent_means_zero: bool = False  # (required False only) no match reads as 0; else the count is left out
    bits: int = 64  # the width of the program's counter: a 32-bit one wraps (unwrap_count)

    def __post_init__(self) -> None:
        what = f"count {self.name!r}"
        if not NAME_RE.fullmatch(self.name):
            raise AdapterError(f"{what}: a count's name is letters, digits, _ . + - (at most 40)")
        if self.source not in (*STREAMS, POST, PACKET_STATISTICS):
            if not self.source.startswith("file:"):
                raise AdapterError(f"{what}: source {self.source!r}: use stderr, stdout, post, {PACKET_STATISTICS} "
                                   "or file:TEMPLATE")
            _check_file_template(self.file_template, f"{what}: its file: path")
        if (self.pattern is None) == (self.json_path is None):
            raise AdapterError(f"{what}: give pattern or json_path (one of them)")
        if self.pattern is not None:
            try:
                groups = re.compile(self.pattern).groups
            except re.error as e:
                raise AdapterError(f"{what}: pattern {self.pattern!r} is not a regex: {e}") from None
            if groups != 1:
                raise AdapterError(f"{what}: pattern {self.pattern!r} has {groups} groups: give exactly one, "
                                   "around the number (write others as (?:...))")
        if self.json_path is not None and not all(self.json_path.split(".")):
            raise AdapterError(f"{what}: json_path {self.json_path!r}: give names joined by dots, "
                               "e.g. stats.capture.kernel_packets")
        if self.absent_means_zero and self.required:
            raise AdapterError(f"{what}: absent_means_zero needs required = false")
        if self.bits not in COUNTER_BITS:
            raise AdapterError(f"{what}: bits {self.bits}: give {' or '.join(map(str, COUNTER_BITS))}")

    @property
    def file_template(self) -> str | None:
        """The file's template ("{outdir}/eve.json") for a file: source, else None."""
        return self.source[len("file:"):] if self.source.startswith("file:") else None

    def match(self, line: str) -> str | int | None:
        """What this count finds in one line: the pattern's group (its last match in the line), or
        the number at json_path in a JSON line; None if nothing."""
        if self.pattern is not None:
            found = None
            for m in re.finditer(self.pattern, line):
                found = m.group(1)
            return found
        return _json_number(line, self.json_path.split("."))


def _number(c: Count, found: str | int) -> int:
    """A count's number from what it found: "1,234" reads 1234; CountError for what is not a number."""
    if isinstance(found, int):
        return found
    digits = found.replace(",", "")
    if not digits.isascii() or not digits.isdigit():
        raise CountError(f"count {c.name!r}: pattern {c.pattern!r} captured {found[:LAST_LINE_CHARS]!r}, not a number")
    return int(digits)


def _json_number(line: str, path: list[str]) -> int | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        value: Any = json.loads(line)
    except (ValueError, RecursionError):
        return None
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _check_file_template(template: str, what: str) -> None:
    """A file: count's path must stay in the trial's folder: {out}, or {outdir}/ and a relative path
    of plain names (no "..", no absolute path, no other folder). Checked when the adapter is loaded:
    capbench never opens a file outside the folder (the message says what is wrong, never the path:
    the folder's files are the program's, any other may be someone's secret)."""
    words, _ = _template_fields(template, what)
    rest = template[len("{outdir}/"):] if template.startswith("{outdir}/") else None
    if len(words) != 1 or not (template == "{out}" or (rest and _plain_relative(rest))):
        raise AdapterError(f"{what} must stay in the trial's folder: give file:{{out}} or file:{{outdir}}/NAME (names "
                           "joined by /, no '..', no other field than {iface} {cpu} {duration})")


def _plain_relative(path: str) -> bool:
    """A relative path of plain names, which may name {iface}, {cpu}, {duration} (none holds a "/"
    or is "." or ".."), not {out} or {outdir}."""
    return all(part not in ("", ".", "..") for part in path.split("/")) and not {"{out}", "{outdir}"} & {
        f"{{{name}}}" for _, name, _, _ in string.Formatter().parse(path) if name}


# --- a program's output, as it arrives ------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """The lines of `text`, cut as a program's stream is (testbed/procs.Lines)."""
    lines = Lines()
    return lines.feed(text.encode("utf-8", "surrogateescape")) + lines.end()


class CountReader:
    """An adapter's counts and ready line, matched line by line as the program's output arrives, so
    nothing of it needs to be kept: for each count the last thing it found, for each source its last
    non-blank line (for the error of a count that found nothing). `feed` is called by the threads
    that read the program's streams (one per source); it never raises."""

    def __init__(self, adapter: Adapter):
        self.adapter = adapter
        self.ready = threading.Event()  # set by the first line of ready_stream that ready_pattern finds
        self._ready_re = re.compile(adapter.ready_pattern) if adapter.ready_pattern is not None else None
        self._found: dict[str, str | int] = {}
        self._last: dict[str, str] = {}  # source: its last non-blank line, cut
        self._unread: dict[str, str] = {}  # file: source: why capbench did not read it

    def feed(self, source: str, line: str) -> None:
        if self._ready_re is not None and source == self.adapter.ready_stream and not self.ready.is_set() \
                and self._ready_re.search(line):
            self.ready.set()
        for c in self.adapter.counts:
            if c.source == source:
                found = c.match(line)
                if found is not None:
                    self._found[c.name] = found
        if line.strip():
            self._last[source] = line.strip()[:LAST_LINE_CHARS]

    def feed_text(self, source: str, text: str) -> None:
        for line in split_lines(text):
            self.feed(source, line)
        self._last.setdefault(source, "")  # read, if empty

    def unread(self, source: str, why: str) -> None:
        """A count's file capbench did not read, and why (a few words of its own, not the file's)."""
        self._unread[source] = why

    def counts(self) -> dict[str, int]:
        """{count name: number}; CountError for a required count that found nothing."""
        out = {}
        for c in self.adapter.counts:
            if c.name in self._found:
                out[c.name] = _number(c, self._found[c.name])
            elif c.absent_means_zero:
                out[c.name] = 0
            elif c.required:
                if c.source in self._unread:
                    raise CountError(f"{self.adapter.name}: count {c.name!r} reads {c.file_template}, which capbench "
                                     f"did not read: {self._unread[c.source]}")
                if c.file_template is not None and c.source not in self._last:
                    raise CountError(f"{self.adapter.name}: count {c.name!r} reads {c.file_template}, which was not "
                                     "read (the program did not write it?)")
                how = f"pattern /{c.pattern}/" if c.pattern is not None else f"json_path {c.json_path}"
                raise CountError(f"{self.adapter.name}: count {c.name!r} ({how}) found nothing in its {c.source}; "
                                 f"its last line: {self._last.get(c.source) or '(nothing)'!r}")
        return out


def unwrap_count(value: int, bits: int, reference: int | None) -> tuple[int, int]:
    """(the count, how many times it wrapped): a `bits`-wide counter that passed 2**bits reads
    value mod 2**bits. With a `reference` that should be near the true count (the frames in the
    capture file, those delivered), the count is value + k * 2**bits for the k that brings it
    within half a wrap of the reference; k is 0 without one, or when it is not below."""
    if reference is None or bits >= 64:
        return value, 0
    wrap = 1 << bits
    k = max(0, (reference - value + wrap // 2) // wrap)
    return value + k * wrap, k


# --- adapters --------------------------------------------------------------------------


@dataclass(frozen=True)
class Adapter:
    """How to start, stop and read one capture program (docs/apps.md, "The adapter schema")."""

    name: str
    command: str  # template: {iface} required; {out}, {cpu}, {duration}, {outdir}
    summary: str
    package: str  # the Debian package, for "not installed"
    stop_signal: int
    stop_grace_s: float
    ready_pattern: str | None
    ready_stream: str
    ready_delay_s: float
    settle_s: float
    counts: tuple[Count, ...]
    file_format: str | None
    notes: str
    # A command run after the program has stopped (same fields as the command), whose stdout the
    # counts with source "post" read: for a program that writes no count of its own but a file
    # another tool sums (argus writes flow records; argus-client's racount sums their packets).
    post: str | None = None
    # The user the program switches to when started as root before it opens its files (tcpdump: its
    # build's default, or -Z): capbench gives that user its {outdir} and a fresh {out}.
    drops_to: str | None = None
    # Its loss account, each row's packets one of its counts; None: not declared (default_account
    # when it has a 'dropped' count, else none). The account property says which.
    declared_account: tuple[AccountRow, ...] | None = None
    # Its knobs (fields of its templates, with candidates), and the values this copy runs with
    # (with_knob_values: a step's --vary or a tune's configuration; the defaults otherwise).
    knobs: tuple[AdapterKnob, ...] = ()
    knob_values: tuple[tuple[str, str], ...] = ()
    # Its capture threads poll without sleeping (testpmd's forwarding lcore): their CPU is busy
    # whatever the traffic, so it is placed as capbench-cap's polling backends are (campaign/plan.py).
    polls: bool = False

    def __post_init__(self) -> None:
        what = f"adapter {self.name!r}"
        if not NAME_RE.fullmatch(self.name):
            raise AdapterError(f"{what}: a name is letters, digits, _ . + - (at most 40), starting with a letter "
                               "or digit")
        _, names = _check_command(self.command, f"{what}: command", self.knob_names)
        for k in self.knobs:
            if k.name in FIELDS or not k.name.isidentifier():
                raise AdapterError(f"{what}: knob {k.name!r}: a knob's name is a word (letters, digits, _) that "
                                   f"is not a field of every adapter ({', '.join(FIELDS)})")
            for v in (*k.candidates, k.default):
                k.check(v, f"{what}: knob {k.name}")
        for name, value in self.knob_values:
            if name not in self.knob_names:
                raise AdapterError(f"{what} has no knob {name!r}: its knobs are {', '.join(self.knob_names) or 'none'}")
            self.knob(name).check(value, f"{what}: knob {name}")
        if self.file_format is not None and self.file_format not in FILE_FORMATS:
            raise AdapterError(f"{what}: file_format {self.file_format!r}: use {' or '.join(FILE_FORMATS)}, or leave "
                               "it out")
        if self.file_format is not None and "out" not in names:
            raise AdapterError(f"{what}: file_format {self.file_format} needs {{out}} in the command")
        if self.ready_stream not in STREAMS:
            raise AdapterError(f"{what}: ready stream {self.ready_stream!r}: use stderr or stdout")
        if self.ready_pattern is not None:
            try:
                re.compile(self.ready_pattern)
            except re.error as e:
                raise AdapterError(f"{what}: ready pattern {self.ready_pattern!r} is not a regex: {e}") from None
        _in_range(self.stop_grace_s, GRACE_S, f"{what}: stop grace_s")
        _in_range(self.ready_delay_s, DELAY_S, f"{what}: ready delay_s")
        _in_range(self.settle_s, DELAY_S, f"{what}: settle_s")
        if self.post is not None:
            _template_fields(self.post, f"{what}: post", self.knob_names)
        if self.drops_to is not None and not NAME_RE.fullmatch(self.drops_to):
            raise AdapterError(f"{what}: drops_to: give a user's name")
        if any(c.source == POST for c in self.counts) and self.post is None:
            raise AdapterError(f"{what}: a count reads the post command's output, but there is no post command")
        seen = set()
        for c in self.counts:
            if c.name in seen:
                raise AdapterError(f"{what}: count {c.name!r} twice")
            seen.add(c.name)
        for a in self.declared_account or ():
            if a.count not in seen:
                raise AdapterError(f"{what}: account row {a.layer!r} reads count {a.count!r}, which it does not have: "
                                   f"use one of {', '.join(sorted(seen)) or 'its counts (it has none)'}")
        # A trial's `received` is the frames of the capture file, else the program's captured count.
        if self.file_format is None and "captured" not in seen:
            raise AdapterError(f"{what}: capbench cannot tell what it captured: give a count named 'captured' or "
                               f"file_format = \"pcap\" with {{out}} in the command")

    @property
    def knob_names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    def knob(self, name: str) -> AdapterKnob:
        return next(k for k in self.knobs if k.name == name)

    def with_knob_values(self, values: Mapping[str, str]) -> Adapter:
        """This adapter running with these knob values (the others at their defaults); checked."""
        return replace(self, knob_values=tuple(values.items())) if values else self

    def knob_fields(self) -> dict[str, str]:
        """The template's knob fields: each knob's value for this run, else its default."""
        given = dict(self.knob_values)
        return {k.name: given.get(k.name, k.default) for k in self.knobs}

    @property
    def account(self) -> tuple[AccountRow, ...]:
        """Its loss account: the declared rows, else the default for a program with a 'dropped' count."""
        if self.declared_account is not None:
            return self.declared_account
        return default_account(self.name) if any(c.name == DEFAULT_DROP_COUNT for c in self.counts) else ()

    @property
    def program(self) -> str:
        """The executable: the command's first word."""
        return shlex.split(self.command)[0]

    def argv(self, *, iface: str, out: str, cpu: int | None, duration_s: float, outdir: str) -> list[str]:
        """The command with the fields substituted, one word at a time."""
        words, _ = _check_command(self.command, f"adapter {self.name!r}: command", self.knob_names)
        values = _values(iface=iface, out=out, cpu=cpu, duration_s=duration_s, outdir=outdir) | self.knob_fields()
        return _substitute(words, values, f"adapter {self.name!r}: command")

    def filled_command(self) -> str:
        """The command template with its knobs' fields filled (knob_fields) and the run's fields
        ({iface}, {out}, ...) left for capbench: still a template, as `--app NAME=...` takes it.
        A word is quoted only where shlex would split it (a knob's value never needs it:
        AdapterKnob.check)."""
        words, _ = _check_command(self.command, f"adapter {self.name!r}: command", self.knob_names)
        knobs = self.knob_fields()

        def filled(word: str) -> str:
            out = []
            for literal, name, _spec, _conv in string.Formatter().parse(word):
                out.append(literal.replace("{", "{{").replace("}", "}}"))
                if name is not None:
                    out.append(knobs[name] if name in knobs else f"{{{name}}}")
            return "".join(out)

        return " ".join(w if TEMPLATE_WORD_RE.fullmatch(w) else shlex.quote(w) for w in map(filled, words))

    def file_paths(self, *, iface: str, out: str, cpu: int | None, duration_s: float,
                   outdir: str) -> dict[str, str]:
        """{file template: path} of each file a count reads: the runner reads them after the stop
        and hands their text to read_counts under the same keys."""
        values = _values(iface=iface, out=out, cpu=cpu, duration_s=duration_s, outdir=outdir)
        paths = {}
        for c in self.counts:
            if c.file_template is not None:
                words, _ = _template_fields(c.file_template, f"adapter {self.name!r}: count {c.name!r}")
                paths[c.file_template] = " ".join(_substitute(words, values, f"adapter {self.name!r}"))
        return paths

    def check(self) -> None:
        """AdapterError unless the template is sound and the program is there."""
        _check_command(self.command, f"adapter {self.name!r}: command", self.knob_names)
        for program in (self.program, *([shlex.split(self.post)[0]] if self.post else [])):
            found = (os.path.isfile(program) and os.access(program, os.X_OK)) if "/" in program else \
                shutil.which(program)
            if not found:
                raise AdapterError(f"{program} is not installed: apt-get install {self.package}, or give its path "
                                   "in the command")

    def read_counts(self, stdout: str, stderr: str, files: Mapping[str, str]) -> dict[str, int]:
        """{count name: number} from what the program printed and wrote, whole (files: {file template:
        text}, POST: the post command's stdout, PACKET_STATISTICS: its sockets' as capbench reads
        them); CountError for a required count that is not there.
        A trial reads them as they arrive (CountReader)."""
        reader = CountReader(self)
        reader.feed_text("stdout", stdout)
        reader.feed_text("stderr", stderr)
        for key, text in files.items():
            reader.feed_text(key if key in (POST, PACKET_STATISTICS) else f"file:{key}", text)
        return reader.counts()

    def drop_ids(self) -> tuple[int, int] | None:
        """(uid, gid) of the user the program drops to, when capbench runs as root and that user
        exists (else the program cannot switch to it either)."""
        if self.drops_to is None or os.geteuid() != 0:
            return None
        try:
            pw = pwd.getpwnam(self.drops_to)
        except KeyError:
            return None
        return pw.pw_uid, pw.pw_gid

    def with_command(self, command: str) -> Adapter:
        """This adapter with another template (checked like any)."""
        return replace(self, command=command)


def post_argv(adapter: Adapter, *, iface: str, out: str, cpu: int | None, duration_s: float,
              outdir: str) -> list[str] | None:
    """The adapter's post command with its fields, None without one."""
    if adapter.post is None:
        return None
    values = _values(iface=iface, out=out, cpu=cpu, duration_s=duration_s, outdir=outdir) | adapter.knob_fields()
    return _substitute(shlex.split(adapter.post), values, f"adapter {adapter.name!r}: post")


def _in_range(value: float, bounds: tuple[float, float], what: str) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise AdapterError(f"{what} is {value:g}: give {bounds[0]:g} to {bounds[1]:g} seconds")


# --- the TOML schema -------------------------------------------------------------------

_ADAPTER_KEYS = ("command", "summary", "package", "stop", "ready", "settle_s", "file_format", "notes", "counts",
                 "post", "drops_to", "account", "knobs", "polls")
_KNOB_KEYS = ("candidates", "default", "governs", "meaning")
_ACCOUNT_KEYS = ("layer", "counter", "explains", "count", "cross_check")
_STOP_KEYS = ("signal", "grace_s")
_READY_KEYS = ("pattern", "stream", "delay_s")
_COUNT_KEYS = ("source", "pattern", "json_path", "meaning", "required", "absent_means_zero", "bits")


class _Table:
    """Typed access to one TOML table; every problem one line naming the file, its line, the table
    and the key (the line as _line_of finds it in `text`, the document)."""

    def __init__(self, obj: Any, where: str, table: str, keys: Sequence[str], text: str = ""):
        self.where, self.table, self.text = where, table, text
        if not isinstance(obj, dict):
            raise self.fail(None, "is not a table")
        for key in obj:
            if key not in keys:
                raise self.fail(key, f"unknown key: use {', '.join(keys)}")
        self.obj = obj

    def fail(self, key: str | None, why: str) -> AdapterError:
        line = _line_of(self.text, self.table, key)
        return AdapterError(f"{self.where}{f':{line}' if line else ''}: [{self.table}]{' ' + key if key else ''}: "
                            f"{why}")

    def get(self, key: str, types: type | tuple[type, ...], what: str, default: Any = None) -> Any:
        if key not in self.obj:
            if default is _REQUIRED:
                raise self.fail(key, f"missing: give {what}")
            return default
        value = self.obj[key]
        types = types if isinstance(types, tuple) else (types,)
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise self.fail(key, f"is not {what}")
        return value

    def seconds(self, key: str, default: float) -> float:
        return float(self.get(key, (int, float), "a number of seconds", default))

    def sub(self, key: str, keys: Sequence[str]) -> _Table:
        return _Table(self.obj.get(key, {}), self.where, f"{self.table}.{key}", keys, self.text)


_REQUIRED = object()
_HEADER = re.compile(r"\s*\[\s*([^\[\]#]*?)\s*\]\s*(?:#.*)?$")


def _line_of(text: str, table: str, key: str | None) -> int | None:
    """The line number in `text` of `key` in the table headed [table] (the header's, without a key
    or when the key is not on a line of its own); for a table written inline in its parent's
    (`captured = { source = ... }`), the line that opens it; None if neither is found."""
    line = _line_in_table(text, table, key)
    parent, _, name = table.rpartition(".")
    return line if line is not None or not parent else _line_of(text, parent, name)


def _line_in_table(text: str, table: str, key: str | None) -> int | None:
    header = None
    for number, line in enumerate(text.splitlines(), 1):
        m = _HEADER.match(line)
        if m:
            if header is not None:
                break
            if re.sub(r"[\s\"']", "", m.group(1)) == table:
                header = number
        elif header is not None and key is not None and re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
            return number
    return header


def _signal(t: _Table, text: str) -> int:
    name = text.upper() if text.upper().startswith("SIG") else "SIG" + text.upper()
    sig = getattr(signal.Signals, name, None) if name.isidentifier() else None
    if sig is None or sig in (signal.SIGKILL, signal.SIGSTOP):
        raise t.fail("signal", f"{text!r} is not a signal that asks a program to stop: use SIGINT, SIGTERM, "
                               "SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2")
    return int(sig)


def _count(t: _Table, name: str) -> Count:
    meaning = t.get("meaning", str, "one line saying what it counts", _REQUIRED)
    source = t.get("source", str, "stderr, stdout or file:TEMPLATE", _REQUIRED)
    if source.startswith("file:"):
        try:
            _check_file_template(source[len("file:"):], "its file: path")
        except AdapterError as e:
            raise t.fail("source", str(e)) from None
    try:
        return Count(name=name, source=source,
                     pattern=t.get("pattern", str, "a regex"), json_path=t.get("json_path", str, "a dotted path"),
                     meaning=meaning.strip(), required=t.get("required", bool, "true or false", True),
                     absent_means_zero=t.get("absent_means_zero", bool, "true or false", False),
                     bits=t.get("bits", int, "32 or 64", 64))
    except AdapterError as e:
        raise t.fail(None, str(e)) from None


def _account_row(t: _Table) -> AccountRow:
    return AccountRow(layer=t.get("layer", str, "the layer's name (socket, ...)", _REQUIRED).strip(),
                      counter=t.get("counter", str, "what counts it, as the program names it", _REQUIRED).strip(),
                      explains=t.get("explains", str, "one sentence: why frames are lost there", _REQUIRED).strip(),
                      count=t.get("count", str, "the name of one of its counts", _REQUIRED),
                      cross_check=t.get("cross_check", bool, "true or false", False))


def _account(t: _Table, name: str) -> tuple[AccountRow, ...] | None:
    rows = t.get("account", list, "an array of tables ([[NAME.account]])")
    if rows is None:
        return None
    return tuple(_account_row(_Table(body, t.where, f"{name}.account", _ACCOUNT_KEYS, t.text)) for body in rows)


def _strings(t: _Table, key: str, what: str, required: bool = True) -> tuple[str, ...]:
    """A list of strings (numbers read as their text: candidates = [256, 1024])."""
    values = t.get(key, list, what, _REQUIRED if required else [])
    if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values) or (required and not values):
        raise t.fail(key, f"is not {what}")
    return tuple(str(v) for v in values)


def _knob(t: _Table, name: str) -> AdapterKnob:
    candidates = _strings(t, "candidates", "a list of the values a search tries, ascending")
    default = t.get("default", (str, int), "the value it runs with when not set", _REQUIRED)
    return AdapterKnob(name=name, candidates=candidates, default=str(default),
                       governs=_strings(t, "governs", "a list of its account's layers", required=False),
                       meaning=t.get("meaning", str, "one line: what it sets", "").strip())


def _adapter(t: _Table, name: str) -> Adapter:
    command = t.get("command", str, "the program's command template", _REQUIRED)
    try:
        program = inputs.command_words(command, "command")[0] if command.strip() else ""
    except (ValueError, UsageError):
        program = ""  # the adapter's own check says why
    stop = t.sub("stop", _STOP_KEYS)
    ready = t.sub("ready", _READY_KEYS)
    counts = tuple(_count(_Table(body, t.where, f"{name}.counts.{cname}", _COUNT_KEYS, t.text), cname)
                   for cname, body in t.get("counts", dict, "a table of counts", {}).items())
    try:
        return Adapter(name=name, command=command, summary=t.get("summary", str, "one line", "").strip(),
                       package=t.get("package", str, "a Debian package's name", os.path.basename(program)),
                       stop_signal=_signal(stop, stop.get("signal", str, "a signal's name", "SIGINT")),
                       stop_grace_s=stop.seconds("grace_s", GENERIC_GRACE_S),
                       ready_pattern=ready.get("pattern", str, "a regex"),
                       ready_stream=ready.get("stream", str, "stderr or stdout", "stderr"),
                       ready_delay_s=ready.seconds("delay_s", 0.0), settle_s=t.seconds("settle_s", 0.0),
                       counts=counts, file_format=t.get("file_format", str, "pcap"),
                       notes=t.get("notes", str, "text", "").strip(), post=t.get("post", str, "a command template"),
                       drops_to=t.get("drops_to", str, "a user's name"), declared_account=_account(t, name),
                       knobs=tuple(_knob(_Table(body, t.where, f"{name}.knobs.{kname}", _KNOB_KEYS, t.text), kname)
                                   for kname, body in t.get("knobs", dict, "a table of knobs", {}).items()),
                       polls=t.get("polls", bool, "true or false", False))
    except AdapterError as e:
        raise t.fail(None, str(e)) from None


def parse(text: str, where: str) -> dict[str, Adapter]:
    """The adapters of one TOML document; `where` names it in every message."""
    try:
        doc = tomllib.loads(text)
    except ValueError as e:  # TOMLDecodeError, or an integer of thousands of digits
        raise AdapterError(f"{where}: not valid TOML: {str(e)[:200]}") from None
    except RecursionError:
        raise AdapterError(f"{where}: not valid TOML: tables nested too deep") from None
    adapters = {}
    for name, body in doc.items():
        if not isinstance(body, dict):
            raise AdapterError(f"{where}: {name} is not a table: write each adapter as [{name}]")
        adapters[name] = _adapter(_Table(body, where, name, _ADAPTER_KEYS, text), name)
    return adapters


def builtin() -> dict[str, Adapter]:
    """The adapters capbench ships (apps.toml beside this module)."""
    text = resources.files(__package__).joinpath("apps.toml").read_text(encoding="utf-8")
    return parse(text, "capbench's apps.toml")


def load_file(path: Path | str) -> dict[str, Adapter]:
    """The adapters of a user's TOML file (read as inputs reads any user file)."""
    try:
        text = inputs.read_text(path, what="adapters file", limit=APPS_FILE_MAX_BYTES)
    except AdapterError:
        raise
    except UsageError as e:  # a directory, a FIFO, too large, not UTF-8: the same one line
        raise AdapterError(str(e)) from None
    return parse(text, str(path))


def _generic(name: str, command: str) -> Adapter:
    """An adapter for a program capbench knows nothing of: it counts the frames in {out}."""
    program = os.path.basename(shlex.split(command)[0])
    return Adapter(name=name, command=command, summary=f"{program}, run from a template (capbench counts {{out}})",
                   package=program, stop_signal=int(GENERIC_STOP), stop_grace_s=GENERIC_GRACE_S, ready_pattern=None,
                   ready_stream="stderr", ready_delay_s=GENERIC_READY_DELAY_S, settle_s=GENERIC_SETTLE_S, counts=(),
                   file_format="pcap", notes="No adapter: the frames in {out} are its only count.")


def from_spec(spec: str, known: Mapping[str, Adapter]) -> Adapter:
    """--app 'NAME=COMMAND TEMPLATE': a known NAME with this command; else the adapter of the template's
    program, renamed NAME; else a generic adapter, which needs {out} (the only thing capbench can count)."""
    name, eq, command = spec.partition("=")
    name = name.strip()
    if not eq or not name or not command.strip():
        raise AdapterError(f"--app {spec!r}: give NAME=COMMAND, e.g. 'mydump=tcpdump -i {{iface}} -w {{out}}'")
    if not NAME_RE.fullmatch(name):
        raise AdapterError(f"--app {spec!r}: NAME is letters, digits, _ . + - (at most 40)")
    # a known adapter's knob fields may be named; the adapter the template ends with checks its own
    words, names = _check_command(command, f"--app {name}", {k for a in known.values() for k in a.knob_names})
    if name in known:
        return known[name].with_command(command)
    program = os.path.basename(words[0])
    for adapter in known.values():
        if os.path.basename(adapter.program) == program:
            return replace(adapter, name=name, command=command)
    if "out" not in names:
        raise AdapterError(f"capbench cannot count what {name} captured: give {{out}} in the template or an adapter "
                           "with counts (--apps-file)")
    return _generic(name, command)


def registry(files: Sequence[Path | str] = (), specs: Sequence[str] = (),
             reserved: Collection[str] = ()) -> dict[str, Adapter]:
    """Built-in adapters, then each file's, then each --app (a later one replaces an earlier one of the
    same name); AdapterError for a name that is also a capbench-cap backend (`reserved`)."""
    adapters = builtin()
    for path in files:
        adapters.update(load_file(path))
    for spec in specs:
        adapter = from_spec(spec, adapters)
        adapters[adapter.name] = adapter
    for name in adapters:
        if name in reserved:
            raise AdapterError(f"program adapter {name!r} has the name of a capbench-cap backend: rename it")
    return adapters
