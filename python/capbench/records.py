"""Records that go to disk: frozen dataclasses written as JSON, each with a schema version, and
one loader per record kind that reads every version capbench wrote.

pyperf keeps its JSON format the same way: a version in the file, the history of the versions
beside the constant, and a loader that turns each older shape into today's, or refuses a version
it does not know in one line. Here a record class declares each field once (name, type, default)
and the rest is derived from that declaration:

- the JSON a record is written as (`to_json`: its version first, tuples as lists, a record
  inside a record as an object: `plain`);
- the check of a loaded value (`type_problem`, `fields_problem`: a value of another type is one
  line naming the field, inside a nested record too: `goals[1].loss_ratio is "x", not float`);
- the record read back (`from_json`: lists back into tuples, objects back into the records a
  field declares, a whole number into a float field as a float, keys of newer writers left out,
  and a field the record lacks takes its default: a field added within a version gets the
  default that says what records written before it measured);
- what an older writer left out or wrote as null (`filled`: the field's default, else the empty
  value of its type), for an upgrade step whose older readers took that;
- the version a loader reads (`upgrade`: an older version through its step to the next, a newer
  one or a value that is no version refused).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from capbench.errors import RunError


class RecordError(RunError):
    """A JSON value that holds no record of its kind, and why (one line). `kind`: "schema" (a
    version this capbench does not read), "invalid" (a value no capbench wrote), "corrupt"
    (a record without a field every version has)."""

    def __init__(self, kind: str, why: str):
        super().__init__(why)
        self.kind = kind
        self.why = why


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """{field name: its declared type} of a record class, in declaration order."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


def conforms(value: Any, tp: Any) -> bool:
    """Whether a JSON value can stand for a field of type `tp` (JSON has lists where the record has tuples)."""
    if tp is Any:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        return any(conforms(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if tp in (tuple, list) or origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            return False
        if origin is list or (args and args[-1] is Ellipsis):
            return not args or all(conforms(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args)))
    if tp is dict or origin is dict:
        if not isinstance(value, dict):
            return False
        return not args or all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    if dataclasses.is_dataclass(tp):
        return isinstance(value, dict) and fields_problem(tp, value) is None
    return True  # a type this check does not know: the record's constructor judges


def type_text(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp)


def short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def type_problem(name: str, value: Any, tp: Any) -> str | None:
    """`name is VALUE, not TYPE` when a JSON value cannot stand for a field of type `tp`."""
    return None if conforms(value, tp) else f"{name} is {short(value)}, not {type_text(tp)}"


def _records_in(tp: Any) -> type | None:
    """The record class a field of type `tp` holds a tuple of (`tuple[Goal, ...]`), if any."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and args and dataclasses.is_dataclass(args[0]):
        return args[0]
    return None


def fields_problem(cls: type, record: Mapping[str, Any], where: str = "") -> str | None:
    """The first field of `record` (a JSON object of record class `cls`) whose value cannot stand
    for its declared type, as one line (`type_problem`); a record inside it (a field declared as
    a tuple of records) is judged field by field, its fields named by where they stand
    (`goals[1].loss_ratio`). Fields the object lacks are the constructor's to judge."""
    for name, tp in field_types(cls).items():
        if name not in record:
            continue
        value, inner = record[name], _records_in(tp)
        if inner is not None and isinstance(value, list):
            for i, item in enumerate(value):
                at = f"{where}{name}[{i}]"
                if not isinstance(item, dict):
                    return f"{at} is {short(item)}, not an object"
                problem = fields_problem(inner, item, at + ".")
                if problem:
                    return problem
        elif problem := type_problem(where + name, value, tp):
            return problem
    return None


def numbers(value: Any) -> Iterator[int | float]:
    """Every number in a JSON value (true and false are not numbers here)."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from numbers(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)


COUNTER_LIMIT = 1 << 64  # the programs' counters are 64-bit: a larger number was never counted


def number_problem(name: str, value: Any, *, signed: bool = False) -> str | None:
    """Why the numbers in a field's JSON value are none a counter or clock gives: NaN or infinity,
    beyond a 64-bit counter, or (unless `signed`) below zero; None when they all can be."""
    for x in numbers(value):
        if isinstance(x, float) and not math.isfinite(x):
            return f"{name} holds {x!r}, not a number a counter or clock gives"
        if abs(x) >= COUNTER_LIMIT:
            return f"{name} holds {short(x)}, beyond any 64-bit counter"
        if x < 0 and not signed:
            return f"{name} is {short(value)}: below zero"
    return None


# A terminal's control characters (ESC, CR without LF, backspace, the C1 range): no text a run
# writes holds one (tab and newline stand in error texts and campaign_toml), and printed from a
# loaded file they would rewrite the screen or break the line.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]")


# Every control character, line ends and tabs too (a kept line is one line): printable() turns them into "?".
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` on one line, a tab as a space and every other control character as `?`: what a program printed, a name perf
    read, before it goes into a record (control_text), a message, a terminal or SVG text."""
    return _UNPRINTABLE.sub("?", text.replace("\t", " "))


def control_text(value: Any) -> str | None:
    """The first text (a string or a key) anywhere in a JSON value that holds a control
    character, shown as JSON; None when there is none."""
    if isinstance(value, str):
        return short(value) if _CONTROL.search(value) else None
    if isinstance(value, dict):
        return next((t for k, v in value.items() for t in (control_text(k), control_text(v)) if t), None)
    if isinstance(value, (list, tuple)):
        return next((t for v in value if (t := control_text(v))), None)
    return None


def plain(value: Any) -> Any:
    """A value as JSON holds it: a record as an object of its fields in order, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [plain(x) for x in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def to_json(record: Any, version_key: str = "schema") -> dict[str, Any]:
    """A record as the JSON object it is written as: its version first, then its fields in order."""
    d = plain(record)
    return {version_key: d.pop(version_key), **d}


def _tuples(v: Any) -> Any:
    """JSON lists back into (nested) tuples."""
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _arms(tp: Any) -> tuple[Any, ...]:
    """The types a field of type `tp` may hold (a union's arms)."""
    return typing.get_args(tp) if typing.get_origin(tp) in (types.UnionType, typing.Union) else (tp,)


def _read(tp: Any, v: Any, what: str) -> Any:
    """A JSON value as a field of type `tp` holds it: lists as tuples, objects as the records the
    type declares (`tuple[Goal, ...]`), a whole number where the type wants a float as a float
    (the same number: the record holds one type)."""
    arms = _arms(tp)
    if isinstance(v, dict):
        cls = next((a for a in arms if dataclasses.is_dataclass(a)), None)
        return from_json(cls, v, what) if cls is not None else v
    if isinstance(v, list):
        tup = next((a for a in arms if a is tuple or typing.get_origin(a) is tuple), None)
        if tup is None:
            return v
        args = typing.get_args(tup)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], x, what) for x in v)
        return _tuples(v)
    if isinstance(v, int) and not isinstance(v, bool) and float in arms and int not in arms:
        return float(v)
    return v


def from_json(cls: type, record: Mapping[str, Any], what: str) -> Any:
    """A record of `cls` from its JSON object (of this version's shape): keys it does not declare
    (a newer writer's) are left out, a declared field the object lacks takes its default;
    RecordError ("corrupt") when a field without a default is missing."""
    fields = field_types(cls)
    try:
        return cls(**{k: _read(fields[k], v, what) for k, v in record.items() if k in fields})
    except TypeError as e:
        raise RecordError("corrupt", f"not a capbench {what}: {e}") from None


def _empty(tp: Any) -> Any:
    """What a reader that took a missing value as nothing read for a field of type `tp`: None
    where the type holds it, else 0, 0.0, false, "", an empty list or object."""
    arms = _arms(tp)
    if type(None) in arms:
        return None
    base = typing.get_origin(arms[0]) or arms[0]
    return {bool: False, int: 0, float: 0.0, str: ""}.get(base, [] if base in (tuple, list) else {})


def filled(cls: type, record: Mapping[str, Any]) -> dict[str, Any]:
    """`record` with each field of record class `cls` that it lacks or holds as null where the
    type holds no null given its default, or the empty value of its type when it has none
    (`_empty`), in the records inside it too: the reading of a writer that left out what it
    did not know, in an upgrade step."""
    out = dict(record)
    for f in dataclasses.fields(cls):
        tp = field_types(cls)[f.name]
        value, inner = out.get(f.name), _records_in(tp)
        if inner is not None and isinstance(value, list):
            out[f.name] = [filled(inner, x) if isinstance(x, dict) else x for x in value]
        elif value is None and (f.name not in out or not conforms(None, tp)):
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
            else:
                out[f.name] = _empty(tp)
    return out


def upgrade(record: dict[str, Any], *, current: int, steps: Mapping[int, Callable[[dict], dict]], what: str,
            version_key: str = "schema") -> dict[str, Any]:
    """`record` in the shape of version `current`: an older version taken through `steps`
    (version N -> a function from N's shape to N+1's), this version as it is. A newer version, a
    version older than the oldest step, or a value that is no version is one RecordError ("schema")."""
    version = record.get(version_key)
    oldest = min(steps, default=current)
    if isinstance(version, bool) or not isinstance(version, int) or not oldest <= version <= current:
        readable = f"{oldest} to {current}" if oldest < current else f"{current}"
        newer = " (a newer capbench's)" if isinstance(version, int) and not isinstance(version, bool) \
            and version > current else ""
        raise RecordError("schema", f"{what} schema {short(version)}{newer}, this capbench reads {readable}")
    while version < current:
        record = steps[version](record) | {version_key: version + 1}
        version += 1
    return record
