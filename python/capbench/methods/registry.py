"""Every method capbench runs, one line each (capbench.methods.method): the CLI's --method
choices, the campaign's `methods`, the progress estimates, the answers read back from
searches.jsonl and the report's tables and summary all come from here. Adding a method: its
module (a Method and, for a search, its MethodAnswer) and one line below."""

from __future__ import annotations

from typing import Any

from capbench.errors import UsageError
from capbench.methods.back2back import BackToBack
from capbench.methods.iperf import Iperf
from capbench.methods.latency import Latency
from capbench.methods.method import Method, MethodAnswer
from capbench.methods.mlr import Mlr
from capbench.methods.rfc2544 import Rfc2544
from capbench.methods.sweep import Sweep

REGISTRY: dict[str, Method] = {m.name: m for m in (
    Iperf(),
    Rfc2544(),
    Mlr(),
    Sweep(),
    BackToBack(),
    Latency(),
)}
METHODS: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Method:
    """The method `name` (UsageError naming the known ones for another)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise UsageError(f"unknown method {name!r}: use one of {', '.join(METHODS)}") from None


def answer_from_json(line: dict[str, Any]) -> MethodAnswer:
    """The typed answer of a searches.jsonl line, of any version (MethodAnswer.from_json: a
    RecordError in one line for a version it does not read or a field of another type); UsageError
    with one line for a method this capbench does not know or that has no answer."""
    name = line.get("method")
    method = REGISTRY.get(name) if isinstance(name, str) else None
    if method is None or method.answer_type is None:
        raise UsageError(f"an answer of method {str(name)[:40]!r}, which this capbench does not know "
                         f"(it knows {', '.join(m.name for m in REGISTRY.values() if m.answer_type)})")
    return method.answer_type.from_json(line)


def constant_load(name: str) -> bool:
    """Whether `name` is a known method whose trials are its result (no answer): iperf."""
    m = REGISTRY.get(name)
    return m is not None and m.answer_type is None


def swept(name: str) -> bool:
    """Whether the trials of `name` at several rates of one setting make a sweep (seed 003's table)."""
    m = REGISTRY.get(name)
    return m is not None and m.swept


def trial_help() -> str:
    """--trial's help: each method's default trial length."""
    return ", ".join(f"{m.name} (default {m.trial_s:g} s" + (f", {m.trial_help})" if m.trial_help else ")")
                     for m in REGISTRY.values() if m.trial_s)
