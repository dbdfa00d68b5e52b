"""Tables in the shape of the seed's Table 1, one per backend, drawn from trial records only."""

from __future__ import annotations

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


def backend_table(backend: str, trials: list[TrialResult]) -> Table:
    first = trials[0]
    placement = (f"gen CPU {first.gen_cpu}, kernel rx CPU {first.kernel_rx_cpu}, "
                 f"app CPU {first.cap_cpu}")
    table = Table(
        title=f"Iperf-like capture throughput: {backend} ({link_name(first.link_bps)} link, {placement})",
        box=box.SIMPLE_HEAD,
        title_justify="left",
    )
    # "Offered" is what the generator sent (its own count over its sending time), as the
    # seed's tables give the generator's rate; the target is in the trial record.
    for header in ("Frame [B]", "Offered [pps]", "Captured [pps / Gbps]", "Loss [%]", "App / kernel load [%]"):
        table.add_column(Text(header), justify="right", no_wrap=True)  # Text: "[pps]" is not markup
    table.add_column("Lost at link / backlog /\nsocket / unexplained", justify="right")
    for r in trials:
        loss = format_pct(r.loss_pct, exact_zero=(r.lost == 0))
        style = None if r.lost == 0 else ("red" if r.unexplained else "yellow")
        table.add_row(
            r.size_label,
            offered_cell(r),
            f"{r.rx_pps:,.0f} / {r.rx_gbps:.3f}",
            loss,
            f"{r.app_cpu_pct:.1f} / {r.kernel_cpu_pct:.1f}",
            loss_places(r),
            style=style,
        )
    return table


def group_by_backend(trials: Iterable[TrialResult]) -> dict[str, list[TrialResult]]:
    groups: dict[str, list[TrialResult]] = {}
    for r in trials:
        groups.setdefault(r.backend, []).append(r)
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
