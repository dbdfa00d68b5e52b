"""Tables in the shape of the seed's Table 1, one per backend, drawn from trial records only."""

from __future__ import annotations

import statistics
from collections.abc import Iterable

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from capbench import loss_layers
from capbench.accounting import format_pct
from capbench.rates import link_name
from capbench.trial import OFFERED_MIN_SHARE, TrialResult


def offered_cell(r: TrialResult) -> str:
    """What the generator really sent per second; `*` when that fell short of the offered load."""
    return f"{r.achieved_pps:,.0f}" + ("*" if r.invalid_offered_load else "")


def loss_places(r: TrialResult) -> str:
    """Where the lost packets went: link / backlog / socket / unexplained ("—" when none lost).

    An AF_XDP backend has no socket buffer but rings: its drops there stand in the socket's
    place, marked "xsk"."""
    if r.lost == 0 and r.unexplained == 0 and r.link_drops == 0:
        return "—"
    socket = f"{r.socket_drops:,}"
    if r.xsk_drops:
        socket = f"{r.xsk_drops:,} xsk" if not r.socket_drops else f"{socket} + {r.xsk_drops:,} xsk"
    return f"{r.link_drops:,} / {r.backlog_drops:,} / {socket} / {r.unexplained:,}"


def _step_base(r: TrialResult) -> str:
    """The trial's step without its repetition: repetitions of one step share it."""
    return r.step.rsplit("|rep=", 1)[0] if r.step else f"{r.size_label}|{r.started_at}"


def repetitions(trials: Iterable[TrialResult]) -> dict[str, list[TrialResult]]:
    """Trials grouped by step, repetitions together, in order of the first."""
    groups: dict[str, list[TrialResult]] = {}
    for r in trials:
        groups.setdefault(_step_base(r), []).append(r)
    return groups


def repeated_rates(trials: Iterable[TrialResult]) -> list[tuple[str, list[float]]]:
    """(what, captured pps of each repetition) for the steps that ran more than once."""
    out = []
    for base, rs in repetitions(t for t in trials if not t.invalid_offered_load).items():
        if len(rs) > 1:
            r = rs[0]
            out.append((f"{r.method} {r.backend} {r.size_label} B ({base.split('|pin=')[-1].split('|')[0] or 'cpus'})",
                        [x.rx_pps for x in rs]))
    return out


def _spread(values: list[float], fmt: str) -> str:
    """median, and with repetitions (min–max, sd n=N)."""
    med = statistics.median(values)
    if len(values) == 1:
        return format(med, fmt)
    return (f"{format(med, fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)}, "
            f"sd {format(statistics.stdev(values), fmt)}, n={len(values)})")


def backend_table(title_key: str, trials: list[TrialResult]) -> Table:
    table = Table(title=f"Iperf-like capture throughput: {title_key}", box=box.SIMPLE_HEAD, title_justify="left")
    # "Offered" is what the generator sent (its own count over its sending time), as the
    # seed's tables give the generator's rate; the target is in the trial record.
    # With repetitions each figure is the median, with (min–max, sd, n).
    for header in ("Frame [B]", "Offered [pps]", "Captured [pps / Gbps]", "Loss [%]", "App / kernel load [%]"):
        table.add_column(Text(header), justify="right", no_wrap=True)  # Text: "[pps]" is not markup
    table.add_column("Lost at link / backlog /\nsocket / unexplained", justify="right")
    for rs in repetitions(trials).values():
        r = rs[0]
        lossy = [x for x in rs if x.lost]
        style = None if not lossy else ("red" if any(x.unexplained for x in rs) else "yellow")
        if len(rs) == 1:
            loss = format_pct(r.loss_pct, exact_zero=(r.lost == 0))
            captured = f"{r.rx_pps:,.0f} / {r.rx_gbps:.3f}"
            cpu = f"{r.app_cpu_pct:.1f} / {r.kernel_cpu_pct:.1f}"
            offered = offered_cell(r)
            places = loss_places(r)
        else:
            losses = [x.loss_pct for x in rs]
            loss = "0" if not lossy else (format_pct(statistics.median(losses), exact_zero=False)
                                          + f" (max {format_pct(max(losses), exact_zero=False)})")
            captured = (_spread([x.rx_pps for x in rs], ",.0f")
                        + f" / {statistics.median(x.rx_gbps for x in rs):.3f}")
            cpu = (f"{statistics.median(x.app_cpu_pct for x in rs):.1f} / "
                   f"{statistics.median(x.kernel_cpu_pct for x in rs):.1f}")
            offered = f"{statistics.median(x.achieved_pps for x in rs):,.0f}" + (
                "*" if any(x.invalid_offered_load for x in rs) else "")
            places = "per repetition below" if lossy else "—"
        table.add_row(r.size_label, offered, captured, loss, cpu, places, style=style)
    return table


def table_key(r: TrialResult) -> str:
    """One table per backend and setting: placement, link, app load, processes."""
    key = (f"{r.backend} ({link_name(r.link_bps)} link, gen CPU {r.gen_cpu}, kernel rx CPU {r.kernel_rx_cpu}, "
           f"app CPU {r.cap_cpu}")
    if r.app_load:
        key += f", app load {r.app_load}"
    if r.procs > 1:
        key += f", {r.procs} capture processes"
    if r.ring_bytes:
        key += f", ring {r.ring_bytes / (1 << 20):g} MiB"
    if getattr(r, "backend_args", ""):
        key += f", {r.backend_args}"
    return key + ")"


def group_by_backend(trials: Iterable[TrialResult]) -> dict[str, list[TrialResult]]:
    """Trials by table (table_key), in the order they ran."""
    groups: dict[str, list[TrialResult]] = {}
    for r in trials:
        groups.setdefault(table_key(r), []).append(r)
    return groups


def print_tables(trials: Iterable[TrialResult], console: Console | None = None) -> None:
    """Print one table per backend; to a pipe or file at 120 columns, not rich's default 80."""
    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=120)
    groups = group_by_backend(trials)
    if not groups:
        console.print("No trial finished.")
        return
    for backend, rows in groups.items():
        console.print(backend_table(backend, rows))
        for r in rows:
            line = loss_layers.explain(r)
            if line:
                console.print(Text(f"  {r.size_label}{' B' if r.size_label.isdigit() else ''}: {line}"))
    short = [r for rs in groups.values() for r in rs if r.invalid_offered_load]
    if short:
        targets = ", ".join(dict.fromkeys(
            f"{r.size_label}{' B' if r.size_label.isdigit() else ''}: {r.offered_pps:,.0f} pps" for r in short))
        console.print(f"* the generator sent less than {OFFERED_MIN_SHARE:.1%} of the offered load ({targets}): "
                      f"those rows measure this machine's generator limit, not the capture method at that load.")
    if any(r.xsk_drops for rs in groups.values() for r in rs):
        console.print("xsk: dropped in the AF_XDP socket's rings (XDP_STATISTICS: RX ring full, fill ring empty).")
    if any(r.unexplained for rs in groups.values() for r in rs):
        console.print("[red]Some packets are unexplained: the counters disagree (see trials.jsonl, field raw).[/red]")
