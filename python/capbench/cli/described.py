"""Help texts and lists built from the C programs' declarations (`capbench-cap --describe`,
`capbench-gen --describe`, read by capbench.declared), for the parser and the commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from capbench import declared
from capbench.errors import UsageError


def from_declarations(text_of: Callable[[], Any], fallback: Any = "(`make` builds the programs that list them)"):
    """A help text or list built from the C programs' declarations (--describe); `fallback` where
    they cannot be read (not built yet), so that --help and `capbench report` work without them.
    A text's `%` is escaped: argparse formats help texts with `%`."""
    try:
        value = text_of()
    except UsageError:
        return fallback
    return value.replace("%", "%%") if isinstance(value, str) else value


def own_xdp_names() -> tuple[str, ...]:
    """The backends that attach their own XDP program (an interface holds one: one process)."""
    return declared.names_where(lambda b: b.own_xdp)


def engines_help() -> str:
    return "; ".join(f"{e.name}: {e.summary}" for e in declared.gen().engines)


def app_loads_help() -> str:
    return ", ".join(f"{a.form} ({a.help})" for a in declared.cap().app_loads)


def rings_help() -> str:
    """"pcap, raw: --buffer-size B; afp-v3, fanout: --block-count B / 1 MiB; ...", from the ring specs."""
    by_spec: dict[declared.RingSpec | None, list[str]] = {}
    for b in declared.backends():
        by_spec.setdefault(b.ring, []).append(b.name)
    parts = [f"{', '.join(names)}: {spec.text()}" for spec, names in by_spec.items() if spec is not None]
    unringed = by_spec.get(None)
    return "; ".join(parts) + (f"; not {', '.join(unringed)}" if unringed else "")
