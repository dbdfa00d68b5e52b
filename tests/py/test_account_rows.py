"""The loss account as declared data (issue 29): the capture program's rows (capbench-cap's
backends in their C files, the adapters in apps.toml) reach the record, the account, the tables
and the report as they are, and records written before them (named fields) read as before."""

import dataclasses
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from capbench.report import tables
from capbench.report.load import load_run
from capbench.report.writer import write_report
from capbench.trial import accounting, apps, loss_layers
from capbench.trial.measure import account_drops, layer_counts, program_account
from capbench.trial.record import LayerCount, RecordError, TrialResult, load_trial
from records import make_result
from report_files import FIXTURE

FIXTURES = FIXTURE.parent
# Every stored run's terminal tables and each trial's layers, remarks and Lost cell, as capbench
# printed them before issue 29 (commit 06f54f9): they must read the same from the rows.
BEFORE = FIXTURES / "tables-before-issue-29.txt"
DUMMY_C = Path(__file__).parents[1] / "c" / "backend_dummy.c"


def dummy_row() -> dict:
    """The dummy backend's one account row as its C file declares it (tests/c/backend_dummy.c), in
    the shape capbench-cap's summary prints it."""
    m = re.search(r'dummy_account\[\] = \{\s*\{ "([^"]+)", "([^"]+)",', DUMMY_C.read_text())
    return {"layer": m[1], "counter": m[2], "packets": 0}


def fixture_dump(root: Path, runs: set[str] | None = None) -> str:
    """The stored runs' (those named in `runs`, or all) terminal tables and every trial's account,
    as BEFORE holds them."""
    out = []
    for d in sorted(p.parent for p in root.rglob("trials.jsonl")):
        if runs is not None and str(d.relative_to(root)) not in runs:
            continue
        out.append(f"=== {d.relative_to(root)}")
        run = load_run(d)
        buf = io.StringIO()
        tables.print_tables(run.trials, Console(file=buf, width=120, force_terminal=False, color_system=None),
                            run.outcomes, run.loss_tolerance_frames)
        out.append(buf.getvalue())
        out += [f"{loss_layers.layers(t.result)!r} {loss_layers.remarks(t.result)!r} "
                f"{tables.loss_places(t.result)!r}" for t in run.trials]
    return "\n".join(out) + "\n"


def test_old_records_report_byte_for_byte_as_before():
    # the runs stored before issue 29 (a fixture added since is not an old record)
    before = BEFORE.read_text()
    old_runs = set(re.findall(r"^=== (.+)$", before, re.M))
    assert fixture_dump(FIXTURES, old_runs) == before


def with_dummy_layer(record: dict, spilled: int) -> dict:
    """A record of the stored run as the dummy backend would have made it: `spilled` of its
    frames lost in the dummy's own layer, counted by capbench-cap as its kernel drops."""
    rows = layer_counts({"account": [{**dummy_row(), "packets": spilled}]})
    assert not record["socket_drops"]  # the dummy's row is its only one
    received = record["received"] - spilled
    acc = accounting.account(sent=record["sent"], delivered=record["delivered"], backlog_drops=record["backlog_drops"],
                             layers=rows, received=received)
    return {**record, **dataclasses.asdict(acc), "backend": "dummy"}


def test_a_new_backends_layer_reaches_the_record_the_tables_and_the_report(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    lines = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
    lines = [with_dummy_layer(r, 5_000) if r["backend"] == "afp-v3" else r for r in lines]
    (run / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))

    data = load_run(run)
    dummy = [t.result for t in data.trials if t.result.backend == "dummy"]
    assert dummy and all(r.layers == (LayerCount("dummy tray", "the dummy's tray_spills", 5_000),) for r in dummy)
    r = dummy[0]
    assert ("dummy tray", 5_000, "the dummy's tray_spills") in loss_layers.layers(r)
    assert sum(n for _, n, _ in loss_layers.layers(r)) == r.lost - r.unexplained
    assert "dummy tray 5,000 (the dummy's tray_spills)" in loss_layers.explain(r)
    # The Lost column names the layer, and a line under the table says what counts it.
    assert " / 5,000 dummy tray / " in tables.loss_places(r)
    buf = io.StringIO()
    tables.print_tables(data.trials, Console(file=buf, width=200, color_system=None))
    assert "5,000 dummy tray" in buf.getvalue()
    assert "dummy tray: the dummy's tray_spills." in buf.getvalue()
    assert any(line.startswith("dummy tray: the dummy's tray_spills (lost in ") for line in tables.layer_lines(dummy))
    report = write_report(run)
    assert "dummy tray: the dummy's tray_spills." in report.text.read_text()  # its cells wrap at 120 columns
    for page in (report.markdown, report.html):
        assert "5,000 dummy tray" in page.read_text(), page


def test_the_rows_are_kept_as_the_summary_printed_them():
    rows = layer_counts({"account": [{"layer": "socket", "counter": "pcap_stats ps_drop", "packets": 7},
                                     {"layer": "NIC", "counter": "pcap_stats ps_ifdrop", "packets": 3,
                                      "cross_check": True}]})
    r = make_result(backend="pcap", sent=1_000, received=993, socket_drops=7, layers=rows)
    back = load_trial(r.to_record())
    assert back.layers == rows
    # A cross-check (the NIC's, which capbench reads itself) is no layer of the account.
    assert loss_layers.layers(back) == [("socket", 7, "pcap_stats ps_drop")]
    assert account_drops([dataclasses.asdict(x) for x in rows]) == 7
    assert layer_counts({"packets": 1}) is None  # an older capbench-cap: no rows, the named fields say


@pytest.mark.parametrize("bad, why", [(-1, "below zero"), ("7", "not tuple")])
def test_a_row_with_a_count_that_is_none_is_refused(bad, why):
    record = make_result(layers=(LayerCount("socket", "x", 1),)).to_record()
    record["layers"][0]["packets"] = bad
    with pytest.raises(RecordError, match=why):
        load_trial(record)


def old(socket_drops: int = 0, xsk_drops: int = 0, **kw) -> TrialResult:
    """A record as capbench wrote it before issue 29 (version 1): named fields, no rows."""
    drops = socket_drops + xsk_drops
    record = make_result(sent=10_000, received=10_000 - drops, layers=(), **kw).to_record()
    record.update(schema=1, socket_drops=socket_drops, xsk_drops=xsk_drops, unexplained=0)
    del record["layers"]
    return load_trial(record)


def test_old_named_fields_map_onto_rows():
    assert old(backend="pcap", socket_drops=0).layers == (LayerCount("socket", "libpcap's ps_drop (pcap_stats)", 0),)
    assert old(backend="afp-v3", socket_drops=5).layers == (LayerCount("socket", "PACKET_STATISTICS tp_drops", 5),)
    program = old(backend="tcpdump", app_command="tcpdump -i x", socket_drops=4).layers
    assert [(x.layer, x.packets) for x in program] == [("socket", 4)] and "tcpdump's own report" in program[0].counter
    # afxdp: each XDP_STATISTICS cause a row where they add up, the unbound queues apart.
    cap = {"queues": [0], "xdp": {"not_redirected": 700},
           "kernel": {"rx_dropped": 100, "rx_ring_full": 200, "rx_fill_ring_empty_descs": 100}}
    r = old(backend="afxdp", xsk_drops=1_000, raw={"cap": cap})
    assert [(x.layer, x.packets) for x in r.layers] == [("AF_XDP fill ring", 100), ("AF_XDP RX ring", 200),
                                                            ("AF_XDP queues", 700)]
    cap = {"queues": [0], "kernel": {"rx_dropped": 1}}
    assert [(x.layer, x.packets) for x in old(backend="afxdp", xsk_drops=300, raw={"cap": cap}).layers] == [
        ("AF_XDP rings", 300)]  # without the counters that split them: one row
    # The named fields are gone from today's records: the rows hold them.
    record = old(backend="raw", socket_drops=1).to_record()
    assert not set(record) & {"socket_drops", "xsk_drops"} and record["schema"] == 2


def test_an_old_record_with_rows_keeps_its_rows():
    # Written between the rows and version 2: both, the rows adding up to the named fields.
    record = make_result(backend="pcap", sent=1_000, received=990, socket_drops=10).to_record()
    record.update(schema=1, socket_drops=10, xsk_drops=0)
    r = load_trial(record)
    assert r.layers == (LayerCount("socket", "libpcap's ps_drop (pcap_stats)", 10),) and r.unexplained == 0


def test_an_adapter_declares_its_rows_in_toml():
    tcpdump = apps.builtin()["tcpdump"]
    assert [(a.layer, a.count, a.cross_check) for a in tcpdump.account] == [("socket", "dropped", False),
                                                                          ("NIC", "ifdropped", True)]
    assert apps.builtin()["argus"].account == ()  # no drop count: no row
    rows = apps.account_rows(tcpdump.account, {"dropped": 45_000, "ifdropped": 12})
    assert account_drops(rows) == 45_000  # the kernel drops: the NIC's cross-check is not one
    # A witness written before issue 29 has no rows: its 'dropped' count is the socket's.
    assert program_account({"name": "tcpdump", "counts": {"dropped": 3}})[0]["packets"] == 3


def test_an_adapter_row_must_read_one_of_its_counts():
    text = """
[p]
command = "p -i {iface} -w {out}"
[p.counts.dropped]
source = "stderr"
pattern = '(\\d+) dropped'
meaning = "its drops"
[[p.account]]
layer = "socket"
counter = "its drops"
explains = "its ring was full"
count = "lost"
"""
    with pytest.raises(apps.AdapterError, match="account row 'socket' reads count 'lost', which it does not have: "
                                                "use one of dropped"):
        apps.parse(text, "apps.toml")
    with pytest.raises(apps.AdapterError, match=r"\[p.account\] explains: missing"):
        apps.parse(text.replace('explains = "its ring was full"\n', ""), "apps.toml")


def test_a_cross_check_that_counted_is_a_remark_not_a_layer():
    rows = (LayerCount("socket", "pcap_stats ps_drop", 0), LayerCount("NIC", "pcap_stats ps_ifdrop", 40, True))
    r = make_result(backend="pcap", sent=1_000, delivered=960, received=960, layers=rows)
    assert [name for name, _, _ in loss_layers.layers(r)] == ["interface"]  # the link's 40, by capbench's counters
    assert ("pcap_stats ps_ifdrop counted 40 in the NIC layer, which capbench counts from its own counter (the "
            "account's NIC line, if any): a cross-check, not added") in loss_layers.remarks(r)


def test_capbench_backends_lists_each_ones_account_rows(fake_build, capsys):
    import argparse

    from capbench import declared
    from capbench.cli import info

    assert info.cmd_backends(argparse.Namespace(json=False, apps_file=None)) == 0
    lines = capsys.readouterr().out.splitlines()

    def own(name: str) -> list[str]:
        rows, i = [], next(i for i, line in enumerate(lines) if line.startswith(name + " "))
        for line in lines[i + 1:]:
            if not line.startswith(" "):
                break
            rows.append(line.strip())
        return rows

    assert own("dpdk") == [f"loses in {r.layer}: {r.counter}" for r in declared.backend("dpdk").account]
    assert own("dpdk")[0] == "loses in DPDK port: rte_eth_stats imissed"
    assert own("afp-v3") == ["loses in socket: PACKET_STATISTICS tp_drops"]
    assert own("testpmd")[0] == "loses in DPDK port: its 'RX-missed' (rte_eth_stats imissed)"
    assert own("tcpdump")[-1].endswith("(a cross-check, not added)") and own("argus") == []
    assert info.cmd_backends(argparse.Namespace(json=True, apps_file=None)) == 0
    docs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    dpdk = next(d for d in docs if d["name"] == "dpdk")
    assert [(a["layer"], a["counter"]) for a in dpdk["account"]][:1] == [("DPDK port", "rte_eth_stats imissed")]
