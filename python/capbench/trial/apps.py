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
import re
import shlex
import shutil
import signal
import string
import tomllib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from capbench import inputs
from capbench.errors import RunError, UsageError

FIELDS = ("iface", "out", "cpu", "duration", "outdir")  # what a template may name
STREAMS = ("stderr", "stdout")
POST = "post"  # a count's source: the stdout of the adapter's post command, run after the stop
FILE_FORMATS = ("pcap",)  # pcap or pcapng: capbench counts the frames in it
GRACE_S = (0.1, 60.0)
DELAY_S = (0.0, 60.0)
APPS_FILE_MAX_BYTES = 1 * inputs.MIB
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,39}")
LAST_LINE_CHARS = 200
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


def _template_fields(template: str, what: str) -> tuple[list[str], set[str]]:
    """The words of `template` and the fields they name; AdapterError for what cannot be a template."""
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
            if name not in FIELDS:
                raise AdapterError(f"{what}: unknown field {{{name}}}: use {', '.join('{' + f + '}' for f in FIELDS)}")
            if spec or conversion:
                raise AdapterError(f"{what}: write {{{name}}} alone, without a format or conversion")
            names.add(name)
    return words, names


def _check_command(command: str, what: str) -> tuple[list[str], set[str]]:
    words, names = _template_fields(command, what)
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


# --- counts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Count:
    """One counter the program reports (docs/apps.md, "Counts")."""

    name: str  # captured, dropped, seen, ifdropped, or any other name
    source: str  # stderr | stdout | post | file:TEMPLATE
    pattern: str | None  # a regex with one group capturing the number; the last match counts
    json_path: str | None  # or a dotted path into JSON Lines; the last line that has it counts
    meaning: str  # one line: what it counts and what it misses
    required: bool = True  # False: some versions print it only when non-zero
    absent_means_zero: bool = False  # (required False only) no match reads as 0; else the count is left out

    def __post_init__(self) -> None:
        what = f"count {self.name!r}"
        if not NAME_RE.fullmatch(self.name):
            raise AdapterError(f"{what}: a count's name is letters, digits, _ . + - (at most 40)")
        if self.source not in (*STREAMS, POST):
            if not self.source.startswith("file:"):
                raise AdapterError(f"{what}: source {self.source!r}: use stderr, stdout, post or file:TEMPLATE")
            _template_fields(self.file_template, f"{what}: source")
        if (self.pattern is None) == (self.json_path is None):
            raise AdapterError(f"{what}: give pattern or json_path (one of them)")
        if self.pattern is not None:
            try:
                groups = re.compile(self.pattern, re.MULTILINE).groups
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

    @property
    def file_template(self) -> str | None:
        """The file's template ("{outdir}/eve.json") for a file: source, else None."""
        return self.source[len("file:"):] if self.source.startswith("file:") else None

    def find(self, text: str) -> int | None:
        """The number in `text` (the last match or line), None if there is none."""
        if self.pattern is not None:
            found = None
            for m in re.finditer(self.pattern, text, re.MULTILINE):
                found = m.group(1)
            if found is None:
                return None
            digits = found.replace(",", "")
            if not digits.isascii() or not digits.isdigit():
                raise CountError(f"count {self.name!r}: pattern {self.pattern!r} captured {found!r}, not a number")
            return int(digits)
        return _last_json(text, self.json_path.split("."))


def _last_json(text: str, path: list[str]) -> int | None:
    found = None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value: Any = json.loads(line)
        except (ValueError, RecursionError):
            continue
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            found = value
    return found


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

    def __post_init__(self) -> None:
        what = f"adapter {self.name!r}"
        if not NAME_RE.fullmatch(self.name):
            raise AdapterError(f"{what}: a name is letters, digits, _ . + - (at most 40), starting with a letter "
                               "or digit")
        _, names = _check_command(self.command, f"{what}: command")
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
            _template_fields(self.post, f"{what}: post")
        if any(c.source == POST for c in self.counts) and self.post is None:
            raise AdapterError(f"{what}: a count reads the post command's output, but there is no post command")
        seen = set()
        for c in self.counts:
            if c.name in seen:
                raise AdapterError(f"{what}: count {c.name!r} twice")
            seen.add(c.name)
        # A trial's `received` is the frames of the capture file, else the program's captured count.
        if self.file_format is None and "captured" not in seen:
            raise AdapterError(f"{what}: capbench cannot tell what it captured: give a count named 'captured' or "
                               f"file_format = \"pcap\" with {{out}} in the command")

    @property
    def program(self) -> str:
        """The executable: the command's first word."""
        return shlex.split(self.command)[0]

    def argv(self, *, iface: str, out: str, cpu: int | None, duration_s: float, outdir: str) -> list[str]:
        """The command with the fields substituted, one word at a time."""
        words, _ = _check_command(self.command, f"adapter {self.name!r}: command")
        values = _values(iface=iface, out=out, cpu=cpu, duration_s=duration_s, outdir=outdir)
        return _substitute(words, values, f"adapter {self.name!r}: command")

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
        _check_command(self.command, f"adapter {self.name!r}: command")
        for program in (self.program, *([shlex.split(self.post)[0]] if self.post else [])):
            found = (os.path.isfile(program) and os.access(program, os.X_OK)) if "/" in program else \
                shutil.which(program)
            if not found:
                raise AdapterError(f"{program} is not installed: apt-get install {self.package}, or give its path "
                                   "in the command")

    def read_counts(self, stdout: str, stderr: str, files: Mapping[str, str]) -> dict[str, int]:
        """{count name: number} from what the program printed and wrote (files: {file template: text});
        CountError for a required count that is not there."""
        out = {}
        for c in self.counts:
            if c.file_template is not None:
                text = files.get(c.file_template)
                if text is None:
                    raise CountError(f"{self.name}: count {c.name!r} reads {c.file_template}, which was not read "
                                     "(the program did not write it?)")
            elif c.source == POST:
                text = files.get(POST, "")
            else:
                text = stdout if c.source == "stdout" else stderr
            value = c.find(text)
            if value is None:
                if c.absent_means_zero:
                    out[c.name] = 0
                elif c.required:
                    lines = [ln.strip() for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
                    last = lines[-1][:LAST_LINE_CHARS] if lines else "(nothing)"
                    how = f"pattern /{c.pattern}/" if c.pattern is not None else f"json_path {c.json_path}"
                    raise CountError(f"{self.name}: count {c.name!r} ({how}) found nothing in its {c.source}; "
                                     f"its last line: {last!r}")
                continue
            out[c.name] = value
        return out

    def with_command(self, command: str) -> Adapter:
        """This adapter with another template (checked like any)."""
        return replace(self, command=command)


def post_argv(adapter: Adapter, *, iface: str, out: str, cpu: int | None, duration_s: float,
              outdir: str) -> list[str] | None:
    """The adapter's post command with its fields, None without one."""
    if adapter.post is None:
        return None
    values = _values(iface=iface, out=out, cpu=cpu, duration_s=duration_s, outdir=outdir)
    return _substitute(shlex.split(adapter.post), values, f"adapter {adapter.name!r}: post")


def _in_range(value: float, bounds: tuple[float, float], what: str) -> None:
    if not bounds[0] <= value <= bounds[1]:
        raise AdapterError(f"{what} is {value:g}: give {bounds[0]:g} to {bounds[1]:g} seconds")


# --- the TOML schema -------------------------------------------------------------------

_ADAPTER_KEYS = ("command", "summary", "package", "stop", "ready", "settle_s", "file_format", "notes", "counts",
                 "post")
_STOP_KEYS = ("signal", "grace_s")
_READY_KEYS = ("pattern", "stream", "delay_s")
_COUNT_KEYS = ("source", "pattern", "json_path", "meaning", "required", "absent_means_zero")


class _Table:
    """Typed access to one TOML table; every problem one line naming the file, table and key."""

    def __init__(self, obj: Any, where: str, table: str, keys: Sequence[str]):
        self.where, self.table = where, table
        if not isinstance(obj, dict):
            raise self.fail(None, "is not a table")
        for key in obj:
            if key not in keys:
                raise self.fail(key, f"unknown key: use {', '.join(keys)}")
        self.obj = obj

    def fail(self, key: str | None, why: str) -> AdapterError:
        return AdapterError(f"{self.where}: [{self.table}]{' ' + key if key else ''}: {why}")

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
        return _Table(self.obj.get(key, {}), self.where, f"{self.table}.{key}", keys)


_REQUIRED = object()


def _signal(t: _Table, text: str) -> int:
    name = text.upper() if text.upper().startswith("SIG") else "SIG" + text.upper()
    sig = getattr(signal.Signals, name, None) if name.isidentifier() else None
    if sig is None or sig in (signal.SIGKILL, signal.SIGSTOP):
        raise t.fail("signal", f"{text!r} is not a signal that asks a program to stop: use SIGINT, SIGTERM, "
                               "SIGHUP, SIGQUIT, SIGUSR1 or SIGUSR2")
    return int(sig)


def _count(t: _Table, name: str) -> Count:
    meaning = t.get("meaning", str, "one line saying what it counts", _REQUIRED)
    try:
        return Count(name=name, source=t.get("source", str, "stderr, stdout or file:TEMPLATE", _REQUIRED),
                     pattern=t.get("pattern", str, "a regex"), json_path=t.get("json_path", str, "a dotted path"),
                     meaning=meaning.strip(), required=t.get("required", bool, "true or false", True),
                     absent_means_zero=t.get("absent_means_zero", bool, "true or false", False))
    except AdapterError as e:
        raise t.fail(None, str(e)) from None


def _adapter(t: _Table, name: str) -> Adapter:
    command = t.get("command", str, "the program's command template", _REQUIRED)
    try:
        program = inputs.command_words(command, "command")[0] if command.strip() else ""
    except (ValueError, UsageError):
        program = ""  # the adapter's own check says why
    stop = t.sub("stop", _STOP_KEYS)
    ready = t.sub("ready", _READY_KEYS)
    counts = tuple(_count(_Table(body, t.where, f"{name}.counts.{cname}", _COUNT_KEYS), cname)
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
                       notes=t.get("notes", str, "text", "").strip(), post=t.get("post", str, "a command template"))
    except AdapterError as e:
        raise t.fail(None, str(e)) from None


def parse(text: str, where: str) -> dict[str, Adapter]:
    """The adapters of one TOML document; `where` names it in every message."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise AdapterError(f"{where}: not valid TOML: {str(e)[:200]}") from None
    except RecursionError:
        raise AdapterError(f"{where}: not valid TOML: tables nested too deep") from None
    adapters = {}
    for name, body in doc.items():
        if not isinstance(body, dict):
            raise AdapterError(f"{where}: {name} is not a table: write each adapter as [{name}]")
        adapters[name] = _adapter(_Table(body, where, name, _ADAPTER_KEYS), name)
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
    words, names = _check_command(command, f"--app {name}")
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
