"""What the C programs declare about themselves: the one registry of backends, engines,
size profiles and application loads.

A capture backend declares itself once, in its own C file (name, summary, the seed idea it
stands for, its option table, its capabilities, how a ring size maps to its options), and
`capbench-cap --describe` prints every declaration as one JSON document; `capbench-gen
--describe` does the same for the generator's engines and size profiles. This module runs
each program's `--describe` once per process (the program found by capbench.binaries),
checks the document and offers it as frozen, typed views. Nothing else in Python lists
backends or engines: the sets and tuples that used to (BACKENDS, OWN_XDP_BACKENDS, ... of trial.py,
campaign.XDP_BACKENDS, APP_LOAD_RE) are read from here.

A program built before `--describe` existed (or from another version of the document) is
one line, "rebuild with make", exit status 2.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from capbench.binaries import find_program
from capbench.errors import UsageError
from capbench.options import option_value

DESCRIBE_VERSION = 1  # the document's version this module reads (docs/programs.md, "--describe")
DESCRIBE_TIMEOUT_S = 10.0


class DescribeError(UsageError):
    """The program's --describe did not give a document this capbench reads."""


# --- reading the document ------------------------------------------------------------


class _Reader:
    """Typed access to one JSON object, every problem one line naming the field's path."""

    def __init__(self, obj: Any, where: str, fail: Callable[[str], DescribeError]):
        if not isinstance(obj, dict):
            raise fail(f"{where} is not an object")
        self.obj, self.where, self.fail = obj, where, fail

    def _get(self, key: str, types: type | tuple[type, ...], what: str, *, optional: bool = False,
             default: Any = None) -> Any:
        if key not in self.obj:
            if optional:
                return default
            raise self.fail(f"{self.where} has no {key!r}")
        value = self.obj[key]
        bool_wrong = isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,))
        if bool_wrong or not isinstance(value, types):  # (true is an int to Python, not to JSON)
            raise self.fail(f"{self.where}.{key} is not {what}")
        return value

    def str(self, key: str, **kw: Any) -> str:
        return self._get(key, str, "a string", **kw)

    def int(self, key: str, **kw: Any) -> int:
        return self._get(key, int, "a whole number", **kw)

    def bool(self, key: str, **kw: Any) -> bool:
        return self._get(key, bool, "true or false", **kw)

    def strs(self, key: str, **kw: Any) -> tuple[str, ...]:
        value = self._get(key, list, "a list of strings", **kw) or []
        if not all(isinstance(x, str) for x in value):
            raise self.fail(f"{self.where}.{key} is not a list of strings")
        return tuple(value)

    def ints(self, key: str, **kw: Any) -> tuple[int, ...]:
        value = self._get(key, list, "a list of whole numbers", **kw) or []
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise self.fail(f"{self.where}.{key} is not a list of whole numbers")
        return tuple(value)

    def objects(self, key: str) -> list[_Reader]:
        value = self._get(key, list, "a list")
        return [_Reader(x, f"{self.where}.{key}[{i}]", self.fail) for i, x in enumerate(value)]

    def object(self, key: str, *, optional: bool = False, nullable: bool = False) -> _Reader | None:
        """The object at `key`; None where it may be missing (`optional`) or null (`nullable`) and is."""
        types = (dict, type(None)) if optional or nullable else dict
        value = self._get(key, types, "an object" + (" or null" if nullable else ""), optional=optional)
        return None if value is None else _Reader(value, f"{self.where}.{key}", self.fail)

    def raw(self, key: str, default: Any = None) -> Any:
        return self.obj.get(key, default)


# --- the views -----------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One option of a program, backend or engine, as its C option table declares it."""

    name: str  # "--block-size"
    type: str  # bytes | count | ms | choice | flag | cpus | queues | string (and what later versions add)
    help: str
    min: int | None = None
    max: int | None = None
    default: bool | int | float | str | None = None  # a number, a flag's false, a text ("the page size"), None
    choices: tuple[str, ...] = ()  # type choice only
    short: str | None = None  # "-i", or None
    # A knob's values for a search (capbench tune, run --vary), ascending: numbers (bytes, count),
    # a choice's names, a flag's "off" and "on"; (): not a knob.
    candidates: tuple[int | str, ...] = ()

    @classmethod
    def read(cls, r: _Reader) -> Option:
        default = r.raw("default")
        if not isinstance(default, (bool, int, float, str, type(None))):
            raise r.fail(f"{r.where}.default is not a number, a flag, a string or null")
        candidates = r.raw("candidates")
        option = cls(name=r.str("name"), type=r.str("type"), help=r.str("help", optional=True, default=""),
                     min=r.int("min", optional=True), max=r.int("max", optional=True), default=default,
                     choices=r.strs("choices", optional=True), short=r.str("short", optional=True, default=None),
                     candidates=tuple(candidates) if isinstance(candidates, list) else ())
        if candidates is not None and not option._candidates_fit(candidates):
            raise r.fail(f"{r.where}.candidates is not a list of values the option takes")
        return option

    def _candidates_fit(self, raw: Any) -> bool:
        """The candidates are a list of what the option takes: numbers in its range, its choices."""
        if not isinstance(raw, list) or not raw:
            return False
        if self.type in ("bytes", "count"):
            return all(isinstance(v, int) and not isinstance(v, bool) and self.value_problem(str(v)) is None
                       for v in raw)
        return all(isinstance(v, str) and self.value_problem(v) is None for v in raw)

    def value(self, text: str) -> int | str:
        """`text` as this option takes it: bytes (k/M/G, binary multiples) and counts as numbers, a
        choice or a flag's off/on as given; ValueError when it does not read."""
        if self.type == "bytes":
            return parse_bytes(text)
        if self.type == "count":
            if not text.strip().isdigit():
                raise ValueError(text)
            return int(text)
        return text

    def value_problem(self, text: str) -> str | None:
        """Why the option does not take `text` (a knob's value), or None. Its own rules beyond its
        range (a power of two) are the program's to check, as it runs."""
        if self.type in ("bytes", "count"):
            try:
                v = self.value(text)
            except ValueError:
                return f"give a {'size such as 64k or 4M' if self.type == 'bytes' else 'whole number'}"
            lo, hi = self.min or 0, self.max
            if v < lo or (hi is not None and v > hi):
                return f"give {lo} to {hi}" if hi is not None else f"give {lo} or more"
            return None
        if self.type == "choice":
            return None if text in self.choices else f"give {', '.join(self.choices)}"
        if self.type == "flag":
            return None if text in FLAG_VALUES else f"give {' or '.join(FLAG_VALUES)}"
        return "it is not a knob"


FLAG_VALUES = ("off", "on")  # a flag as a knob's value: left out, given
_BYTE_UNITS = {"": 0, "k": 10, "m": 20, "g": 30}


def parse_bytes(text: str) -> int:
    """Bytes as capbench-cap reads them (cb_parse_bytes): digits, an optional k, M or G (binary
    multiples) and an optional B; ValueError otherwise."""
    t = text.strip().lower()
    t = t[:-1] if t.endswith("b") else t
    unit = t[-1:] if t[-1:] in ("k", "m", "g") else ""
    digits = t[:len(t) - len(unit)]
    if not digits.isdigit() or len(digits) > 19:
        raise ValueError(text)
    return int(digits) << _BYTE_UNITS[unit]


def _option_setting(r: _Reader, options: tuple[Option, ...], text: str | None) -> tuple[str, str] | None:
    """"OPTION=VALUE" of a backend's capabilities as ("--OPTION", value): one of its own `options`'
    choices, or the document is refused."""
    if text is None:
        return None
    name, _, value = text.partition("=")
    name = f"--{name}"  # the C table's names are without their dashes
    option = next((o for o in options if o.name == name), None)
    if option is None or value not in option.choices:
        raise r.fail(f"{r.where}: own_xdp_unless {text!r} names no choice of its options")
    return name, value


def _options(r: _Reader, key: str) -> tuple[Option, ...]:
    options = tuple(Option.read(o) for o in r.objects(key))
    _unique([o.name for o in options], f"{r.where}.{key}", r.fail)
    return options


def _unique(names: list[str], where: str, fail: Callable[[str], DescribeError]) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise fail(f"{where} names {name!r} twice")
        seen.add(name)


def _largest_power_of_two(n: int) -> int:
    """The largest power of two <= n (n >= 1)."""
    return 1 << (n.bit_length() - 1)


@dataclass(frozen=True)
class RingSpec:
    """How a kernel buffer of B bytes (`capbench run --ring`) becomes a backend's options."""

    count_option: str  # gets max(1, B // unit_bytes), rounded and bounded as below
    unit_bytes: int
    unit_option: str | None = None  # set to unit_bytes; below one unit: the largest power of two <= B, count 1
    min_unit_bytes: int = 1
    power_of_two: bool = False  # the count rounded down to a power of two
    min: int | None = None  # bounds of the count
    max: int | None = None
    same_as_count: tuple[str, ...] = ()  # further options given the same count

    @classmethod
    def read(cls, r: _Reader) -> RingSpec:
        spec = cls(count_option=r.str("count_option"), unit_bytes=r.int("unit_bytes"),
                   unit_option=r.str("unit_option", optional=True), min_unit_bytes=r.int("min_unit_bytes",
                                                                                          optional=True, default=1),
                   power_of_two=r.bool("power_of_two", optional=True, default=False),
                   min=r.int("min", optional=True), max=r.int("max", optional=True),
                   same_as_count=r.strs("same_as_count", optional=True))
        if spec.unit_bytes < 1 or spec.min_unit_bytes < 1:
            raise r.fail(f"{r.where}: unit_bytes and min_unit_bytes must be at least 1")
        return spec

    def args(self, ring_bytes: int) -> tuple[str, ...]:
        """The options that give a kernel buffer of about `ring_bytes` (0: none, the backend's default)."""
        if not ring_bytes:
            return ()
        unit = ()
        count = max(1, ring_bytes // self.unit_bytes)
        if self.unit_option is not None:
            size = self.unit_bytes if ring_bytes >= self.unit_bytes else \
                max(self.min_unit_bytes, _largest_power_of_two(ring_bytes))
            unit = (self.unit_option, str(size))
        if self.power_of_two:
            count = _largest_power_of_two(count)
        if self.min is not None:
            count = max(self.min, count)
        if self.max is not None:
            count = min(self.max, count)
        return (*unit, self.count_option, str(count), *(x for o in self.same_as_count for x in (o, str(count))))

    @property
    def options(self) -> tuple[str, ...]:
        """Every option this mapping sets: a backend option of these and --ring set one thing."""
        return (self.count_option, *((self.unit_option,) if self.unit_option else ()), *self.same_as_count)

    def text(self) -> str:
        """For help texts: what one --ring of B bytes becomes."""
        if self.unit_bytes == 1:
            return f"{self.count_option} B"
        pow2 = " (a power of two)" if self.power_of_two else ""
        return f"{self.count_option} B / {_bytes_text(self.unit_bytes)}{pow2}"


def _bytes_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


@dataclass(frozen=True)
class AccountRow:
    """One row of a backend's loss account as its C file declares it (src/cap/account.h): its
    summary's `account` gives each row's packets in this order."""

    layer: str
    counter: str
    explains: str
    cross_check: bool  # a layer capbench counts itself (the NIC's): not in its kernel_drops

    @classmethod
    def read(cls, r: _Reader) -> AccountRow:
        return cls(layer=r.str("layer"), counter=r.str("counter"), explains=r.str("explains"),
                   cross_check=r.bool("cross_check"))


@dataclass(frozen=True)
class Backend:
    """A capture backend of capbench-cap, as its C file declares it."""

    name: str
    summary: str  # one line
    seed: str  # the seed idea it stands for
    options: tuple[Option, ...]  # its own options (the common ones: CapDeclaration.common_options)
    # Attaches its own XDP program to the capture interface. It counts the frames that reach the
    # interface (the "delivered" stage of capbench-cap's summary), so capbench-xdpcount is not
    # started: an interface holds one XDP program (and one such process at a time). Its frames are
    # redirected to an AF_XDP socket or dropped in XDP, so none ever enters a backlog queue.
    own_xdp: bool
    # Counts in the kernel: no application sees the packets, so --app-load does not apply (a run
    # with --app-load still measures it and records app_load None), nor does --write.
    kernel_counter: bool
    xsk_stats: bool  # its kernel drops happen in the AF_XDP rings (XDP_STATISTICS), not in a socket
    # Its kernel count (PACKET_STATISTICS tp_packets) includes every frame the socket queued:
    # what the counter did not read of those is the application layer's drop (app_drops).
    queue_count: bool
    kernel_stats: str  # pcap_stats | packet_statistics | xdp_statistics | xdp_program
    clock: str  # where the receive timestamp comes from: kernel | user
    writes_pcap: bool  # --write works
    workers: bool  # several worker threads/sockets (--workers / --worker-cpus)
    queues: bool  # binds receive queues (--queue)
    needs: tuple[str, ...]  # what preflight must find here (testbed.preflight.NEED_CHECKS has a check for each)
    ring: RingSpec | None  # None: --ring does not apply
    # Its loss account's rows; None: not declared (a null, or a document from before issue 29).
    account: tuple[AccountRow, ...] | None = None
    # Its workers poll without sleeping (dpdk): their CPUs are busy whatever the traffic.
    polls: bool = False
    # Why this capbench-cap cannot run it (built without the library it needs), or None.
    absent: str | None = None
    # (option, value): with that value of its option it attaches no XDP program of its own
    # (dpdk --dpdk-driver af_packet): the test bed's counter is on the interface, and several
    # processes can capture (ran_with); None: own_xdp whatever its options.
    own_xdp_unless: tuple[str, str] | None = None

    def ran_with(self, argv: Sequence[str]) -> Backend:
        """This backend as it runs with its capbench-cap options `argv` (--backend-args, knobs)."""
        if self.own_xdp_unless is None:
            return self
        name, value = self.own_xdp_unless
        return dataclasses.replace(self, own_xdp=False) if option_value(list(argv), name) == value else self

    @classmethod
    def read(cls, r: _Reader) -> Backend:
        caps = r.object("capabilities")
        ring = r.object("ring", nullable=True)
        needs = caps.strs("needs")
        options = _options(r, "options")
        return cls(name=r.str("name"), summary=r.str("summary"), seed=r.str("seed"), options=options,
                   own_xdp=caps.bool("own_xdp"), kernel_counter=caps.bool("kernel_counter"),
                   xsk_stats=caps.bool("xsk_stats"), queue_count=caps.bool("queue_count"),
                   kernel_stats=caps.str("kernel_stats"), clock=caps.str("clock"),
                   writes_pcap=caps.bool("writes_pcap"), workers=caps.bool("workers"), queues=caps.bool("queues"),
                   needs=needs, ring=None if ring is None else RingSpec.read(ring),
                   account=None if r.raw("account") is None else tuple(AccountRow.read(a) for a in r.objects("account")),
                   polls=caps.bool("polls", optional=True, default=False),
                   absent=r._get("absent", (str, type(None)), "a string or null", optional=True),
                   own_xdp_unless=_option_setting(r, options, caps.str("own_xdp_unless", optional=True, default=None)))

    def ring_args(self, ring_bytes: int) -> tuple[str, ...]:
        """capbench-cap options that give this backend a kernel buffer of about `ring_bytes`
        (`capbench run --ring`); () for 0 (its default) or a backend without a ring."""
        return () if self.ring is None else self.ring.args(ring_bytes)

    def option(self, name: str) -> Option | None:
        return next((o for o in self.options if o.name == name), None)


@dataclass(frozen=True)
class Engine:
    """A generator engine of capbench-gen, as its C file declares it."""

    name: str
    summary: str
    seed: str
    options: tuple[Option, ...]
    capabilities: Mapping[str, Any]

    @property
    def needs(self) -> tuple[str, ...]:
        """What it needs of the kernel (live_frames: BPF_PROG_RUN with live frames, Linux >= 5.18)."""
        return tuple(self.capabilities.get("needs", ()))

    @property
    def refusals(self) -> str:
        """What becomes of a frame the interface has no room for: "retried" (sent again) or "lost"
        (an XDP frame the driver drops and counts: a veth's tx_queue_N_xdp_xmit_errors)."""
        return str(self.capabilities.get("refusals", ""))

    @property
    def sends_from(self) -> str:
        """"thread": a thread of capbench-gen sends; "softirq": the engine sets kernel work going that
        sends in the softirq of its CPU (and that CPU's ksoftirqd), in no process of its own."""
        return str(self.capabilities.get("sends_from", "thread"))

    @classmethod
    def read(cls, r: _Reader) -> Engine:
        caps = r.object("capabilities", optional=True)
        if caps is not None:
            caps.strs("needs", optional=True)  # checked: a list of strings
        return cls(name=r.str("name"), summary=r.str("summary"), seed=r.str("seed", optional=True, default=""),
                   options=_options(r, "options"),
                   capabilities=MappingProxyType(dict(caps.obj) if caps is not None else {}))


@dataclass(frozen=True)
class SizeProfile:
    """A frame-length profile of capbench-gen --size (imix:seed, random:MIN-MAX, ...)."""

    name: str
    forms: tuple[str, ...]
    help: str
    lengths: tuple[int, ...] = ()  # a fixed list's lengths (rfc2544, seed); () for the others

    @classmethod
    def read(cls, r: _Reader) -> SizeProfile:
        return cls(name=r.str("name"), forms=r.strs("forms"), help=r.str("help", optional=True, default=""),
                   lengths=r.ints("lengths", optional=True, default=()))


@dataclass(frozen=True)
class AppLoad:
    """One form of capbench-cap --app-load: a name, or name:PARAM with a whole number in [min, max]."""

    name: str
    help: str
    param: str | None = None  # "N", "NS"; None: the name alone
    min: int | None = None
    max: int | None = None

    @classmethod
    def read(cls, r: _Reader) -> AppLoad:
        load = cls(name=r.str("name"), help=r.str("help", optional=True, default=""),
                   param=r.str("param", optional=True), min=r.int("min", optional=True),
                   max=r.int("max", optional=True))
        if load.param is not None and (load.min is None or load.max is None):
            raise r.fail(f"{r.where}: a parameter needs min and max")
        return load

    @property
    def form(self) -> str:
        return self.name if self.param is None else f"{self.name}:{self.param}"

    def accepts(self, text: str) -> bool:
        """Whether `text` is this load, its parameter written as C's parser reads it and in
        canonical digits (no sign, space or leading zero): the text becomes part of step keys."""
        if self.param is None:
            return text == self.name
        name, colon, value = text.partition(":")
        if name != self.name or not colon or not value.isascii() or not value.isdigit():
            return False
        return str(int(value)) == value and self.min <= int(value) <= self.max


@dataclass(frozen=True)
class CapDeclaration:
    """capbench-cap --describe."""

    backends: tuple[Backend, ...]  # in registry order
    common_options: tuple[Option, ...]
    app_loads: tuple[AppLoad, ...]
    default_backend: str
    default_app_load: str

    @classmethod
    def read(cls, doc: Any, fail: Callable[[str], DescribeError]) -> CapDeclaration:
        r = _top(doc, "capbench-cap", fail)
        backends = tuple(Backend.read(b) for b in r.objects("backends"))
        app_loads = tuple(AppLoad.read(a) for a in r.objects("app_loads"))
        d = cls(backends=backends, common_options=_options(r, "common_options"), app_loads=app_loads,
                default_backend=r.str("default_backend"), default_app_load=r.str("default_app_load"))
        if not backends:
            raise fail("it declares no backend")
        _unique([b.name for b in backends], "backends", fail)
        _unique([a.name for a in app_loads], "app_loads", fail)
        if d.default_backend not in {b.name for b in backends}:
            raise fail(f"its default backend {d.default_backend!r} is not one of its backends")
        if not any(a.accepts(d.default_app_load) for a in app_loads):
            raise fail(f"its default app load {d.default_app_load!r} is not one of its app loads")
        return d

    def backend(self, name: str) -> Backend:
        """The backend called `name`; UsageError naming the known ones otherwise."""
        for b in self.backends:
            if b.name == name:
                return b
        raise UsageError(f"unknown backend {name!r}: use {', '.join(self.backend_names)}")

    @property
    def backend_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.backends)

    def check_app_load(self, text: str) -> str:
        """`text` if capbench-cap --app-load takes it, else UsageError listing the forms."""
        if not any(a.accepts(text) for a in self.app_loads):
            raise UsageError(f"cannot read app load {text!r}: use {app_load_forms(self.app_loads)}")
        return text


def app_load_forms(loads: tuple[AppLoad, ...]) -> str:
    """"touch, none, copy, zlib:N (0 to 9) or spin:NS (1 to 1000000000)"."""
    forms = [a.form + (f" ({a.min} to {a.max})" if a.param else "") for a in loads]
    return forms[0] if len(forms) == 1 else f"{', '.join(forms[:-1])} or {forms[-1]}"


@dataclass(frozen=True)
class GenDeclaration:
    """capbench-gen --describe."""

    engines: tuple[Engine, ...]
    size_profiles: tuple[SizeProfile, ...]
    common_options: tuple[Option, ...]
    default_engine: str

    @classmethod
    def read(cls, doc: Any, fail: Callable[[str], DescribeError]) -> GenDeclaration:
        r = _top(doc, "capbench-gen", fail)
        d = cls(engines=tuple(Engine.read(e) for e in r.objects("engines")),
                size_profiles=tuple(SizeProfile.read(p) for p in r.objects("size_profiles")),
                common_options=_options(r, "common_options"), default_engine=r.str("default_engine"))
        if not d.engines:
            raise fail("it declares no engine")
        _unique([e.name for e in d.engines], "engines", fail)
        if d.default_engine not in d.engine_names:
            raise fail(f"its default engine {d.default_engine!r} is not one of its engines")
        return d

    @property
    def engine_names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.engines)

    def engine(self, name: str) -> Engine:
        for e in self.engines:
            if e.name == name:
                return e
        raise UsageError(f"unknown engine {name!r}: use {' or '.join(self.engine_names)}")


def _top(doc: Any, program: str, fail: Callable[[str], DescribeError]) -> _Reader:
    r = _Reader(doc, "the document", fail)
    if r.raw("program") != program:
        raise fail(f"it describes {r.raw('program')!r}, not {program}")
    version = r.raw("describe_version")
    if version != DESCRIBE_VERSION:
        raise fail(f"its describe_version is {version!r}, this capbench reads {DESCRIBE_VERSION}")
    return r


# --- running the programs --------------------------------------------------------------


def describe_document(path: Path | str, program: str) -> Any:
    """The JSON document `path --describe` prints; DescribeError (one line, "rebuild with make")
    when the program cannot describe itself."""
    def fail(why: str) -> DescribeError:
        return DescribeError(f"{program} ({path}) cannot describe itself: {why}: rebuild with make")

    try:
        p = subprocess.run([str(path), "--describe"], capture_output=True, text=True, check=False,
                           stdin=subprocess.DEVNULL, timeout=DESCRIBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise fail(f"--describe did not end within {DESCRIBE_TIMEOUT_S:g} s") from None
    except OSError as e:
        raise fail(f"cannot run it: {e.strerror}") from None
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        raise fail(last[:200])  # a program built before --describe existed: "unknown option --describe"
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise fail(f"--describe printed no JSON document ({e})") from None


@cache
def _cap_at(path: str) -> CapDeclaration:
    def fail(why: str) -> DescribeError:
        return DescribeError(f"capbench-cap ({path}) --describe: {why}: rebuild with make")
    return CapDeclaration.read(describe_document(path, "capbench-cap"), fail)


@cache
def _gen_at(path: str) -> GenDeclaration:
    def fail(why: str) -> DescribeError:
        return DescribeError(f"capbench-gen ({path}) --describe: {why}: rebuild with make")
    return GenDeclaration.read(describe_document(path, "capbench-gen"), fail)


def cap() -> CapDeclaration:
    """capbench-cap's declaration (its --describe, run once per program path and process)."""
    return _cap_at(str(find_program("capbench-cap")))


def gen() -> GenDeclaration:
    """capbench-gen's declaration (its --describe, run once per program path and process)."""
    return _gen_at(str(find_program("capbench-gen")))


# --- the registry, as the rest of capbench reads it -----------------------------------


def backends() -> tuple[Backend, ...]:
    return cap().backends


def backend_names() -> tuple[str, ...]:
    return cap().backend_names


def backend(name: str) -> Backend:
    return cap().backend(name)


def engine_names() -> tuple[str, ...]:
    return gen().engine_names


def check_app_load(text: str) -> str:
    return cap().check_app_load(text)


def ring_args(backend_name: str, ring_bytes: int) -> tuple[str, ...]:
    """capbench-cap options for a kernel buffer of about `ring_bytes` (--ring) with `backend_name`."""
    return backend(backend_name).ring_args(ring_bytes) if ring_bytes else ()


def names_where(test: Callable[[Backend], bool]) -> tuple[str, ...]:
    """The backends for which `test` holds, in registry order ("afxdp, xdp" in messages)."""
    return tuple(b.name for b in backends() if test(b))


def shared_interface_backends() -> str:
    """The backends several capture processes can share an interface with, in words: those without
    an XDP program of their own, and those that attach none with one of their options' values."""
    return ", ".join([b.name for b in backends() if not b.own_xdp]
                     + [f"{b.name} with {b.own_xdp_unless[0]} {b.own_xdp_unless[1]}"
                        for b in backends() if b.own_xdp and b.own_xdp_unless])
