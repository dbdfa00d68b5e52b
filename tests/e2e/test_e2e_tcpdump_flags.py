"""`capbench capture` with tcpdump's flags on a real veth test bed: -i, -w, -c, -s, the file it
writes read by tools nobody here wrote (capinfos, tcpdump -r), -c counting every frame."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time

import pytest
from capbench import __version__
from capbench.testbed import netns

from e2e_env import capbench_cmd, capbench_env, missing_prerequisite, run_capbench
from pcap_file import write_pcap

pytestmark = pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite()))

FOREIGN = 200   # frames of another EtherType, sent by tcpreplay: not capbench's
STAMPED = 1000  # capbench-gen's, then its 3 trailer frames
COUNT = 1100    # -c: every foreign frame and the first 900 stamped ones
SNAPLEN = 100


def tool(*argv: str) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, (argv, p.stderr)
    return p.stdout


def capture_while(tb, args: list[str], send, interrupt: bool = False) -> tuple[dict, str]:
    """`capbench capture ARGS` in the test bed's capture namespace while send() sends: its
    summary and its stderr. `interrupt`: Ctrl-C once sent (else -c ends it)."""
    cap = subprocess.Popen(capbench_cmd("capture", "--netns", tb.cap_ns, "-i", tb.cap_if, *args, "--duration", "60"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=capbench_env())
    try:
        assert cap.stdout is not None
        assert json.loads(cap.stdout.readline())["type"] == "ready"
        send()
        if interrupt:
            time.sleep(0.2)  # the last frames reach the socket
            cap.send_signal(signal.SIGINT)
        rest, err = cap.communicate(timeout=30)
    finally:
        if cap.poll() is None:
            cap.kill()
            cap.wait()
    assert cap.returncode == 0, err
    summary = json.loads(rest.splitlines()[-1])
    assert summary["type"] == "summary"
    return summary, err


def send_stamped(tb, count: int, *args: str) -> None:
    gen = run_capbench("gen", "--netns", tb.gen_ns, "-i", tb.gen_if, "--engine", "afpacket", "--rate", "20kpps",
                       "--count", str(count), "--dst-mac", tb.dst_mac, *args, timeout=60)
    assert gen.returncode == 0, gen.stderr


@pytest.mark.parametrize("backend", ["pcap", "afp-v3"])
def test_capture_writes_what_tcpdump_reads_and_counts_every_frame(tb, tmp_path, backend):
    out = tmp_path / "out.pcap"
    foreign = write_pcap(tmp_path / "foreign.pcap", [300] * FOREIGN, snaplen=300)

    def send():  # first the foreign frames, all of them, then the generator's stream
        tool(*netns.exec_argv(tb.gen_ns, ["tcpreplay", "-q", "-i", tb.gen_if, "--pps", "2000", str(foreign)]))
        send_stamped(tb, STAMPED, "--size", "200")

    summary, err = capture_while(tb, ["-b", backend, "-w", str(out), "-c", str(COUNT), "-s", str(SNAPLEN)], send)
    # -c counts every frame; the summary tells capbench's apart from the others.
    assert (summary["packets"], summary["foreign"], summary["received"]) == (COUNT, FOREIGN, COUNT - FOREIGN)
    assert (f"capbench: captured {COUNT:,} frames: {COUNT - FOREIGN:,} capbench frames (each sequence number "
            f"once), 0 capbench trailers, {FOREIGN} others") in err

    # The file, as capinfos and tcpdump read it: every frame, cut at the snap length.
    info = tool("capinfos", "-c", "-l", "-z", "-M", str(out))
    assert re.search(rf"Number of packets:\s+{COUNT}\b", info), info
    assert re.search(rf"Packet size limit:\s+file hdr: {SNAPLEN} bytes", info), info
    assert re.search(rf"Packet size limit:\s+inferred: {SNAPLEN} bytes", info), info  # the longest record
    # Each record keeps its length on the wire (without FCS): 300 B foreign, 196 B stamped.
    mean = (FOREIGN * 300 + (COUNT - FOREIGN) * 196) / COUNT
    assert re.search(rf"Average packet size:\s+{mean:.2f} bytes", info), info
    # -nn: numbers, not names; `-e` prints each frame's EtherType and its length on the wire.
    # (An unknown EtherType's bytes follow its line as a hex dump, each line indented.)
    lines = [line for line in tool("tcpdump", "-r", str(out), "-nn", "-e").splitlines()
             if not line.startswith("\t")]
    assert len(lines) == COUNT
    assert sum("ethertype Unknown (0x88b5)" in line for line in lines) == FOREIGN
    stamped = [line for line in lines if ".52190: UDP" in line]
    assert len(stamped) == COUNT - FOREIGN
    assert all("ethertype IPv4 (0x0800), length 196:" in line for line in stamped)  # 200 B incl. FCS


def test_snaplen_below_a_stamp_is_refused_in_one_line(tb):
    p = run_capbench("capture", "--netns", tb.cap_ns, "-i", tb.cap_if, "-s", "59", "-c", "1")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "capbench-cap: bad --snaplen '59': give 60..262144 bytes (the stamp needs 60), or 0 for the default"]


def test_version_of_capture_and_its_program(tb):
    p = run_capbench("capture", "-V")
    assert p.returncode == 0
    assert p.stdout.splitlines() == [f"capbench {__version__}", f"capbench-cap {__version__}"]


def test_written_file_is_readable_by_capbench_cap_read_too(tb, tmp_path, binaries):
    """The written file decoded by capbench-cap --read counts what the live capture counted."""
    out = tmp_path / "o.pcap"
    live, _err = capture_while(tb, ["-w", str(out), "-c", "503"], lambda: send_stamped(tb, 500))
    read = json.loads(subprocess.run([str(binaries.cap), "--read", str(out)], capture_output=True, text=True,
                                     timeout=30, check=True).stdout.splitlines()[-1])
    assert (live["packets"], live["received"], live["trailer"]["seen"]) == (503, 500, 3)
    assert (read["file_frames"], read["received"], read["lost"]) == (503, 500, 0)


def _send_both(tb, tmp_path):
    """The foreign frames (another EtherType) and capbench's UDP stream, which the filters tell apart."""
    foreign = write_pcap(tmp_path / "foreign.pcap", [300] * FOREIGN, snaplen=300)

    def send():
        tool(*netns.exec_argv(tb.gen_ns, ["tcpreplay", "-q", "-i", tb.gen_if, "--pps", "2000", str(foreign)]))
        send_stamped(tb, STAMPED, "--size", "200")
    return send


def tcpdump_while(tb, out, expr: str) -> subprocess.Popen:
    """tcpdump with the same filter on the capture veth, writing `out`, once it listens."""
    td = subprocess.Popen(netns.exec_argv(tb.cap_ns, ["tcpdump", "-i", tb.cap_if, "-U", "-w", str(out), expr]),
                          stderr=subprocess.PIPE, text=True)
    assert td.stderr is not None
    line = td.stderr.readline()
    assert "listening on" in line, line
    return td


@pytest.mark.parametrize("backend", ["pcap", "afp-v3", "fanout"])
def test_a_filter_after_the_options_captures_what_tcpdump_with_it_captures(tb, tmp_path, backend):
    """A filter as tcpdump takes it (after the options) is compiled by libpcap and applied in the
    kernel: libpcap's socket (pcap), the packet socket (afp-v3), each fanout socket. "udp" keeps
    capbench's stream and none of the foreign frames, as tcpdump with "udp" beside it does; "not udp"
    keeps nothing of the stream. The summary records the filter."""
    out = tmp_path / "td.pcap"
    args = ["-b", backend, *(["--workers", "2"] if backend == "fanout" else [])]
    td = tcpdump_while(tb, out, "udp")
    try:
        summary, _ = capture_while(tb, [*args, "udp"], _send_both(tb, tmp_path), interrupt=True)
    finally:
        td.send_signal(signal.SIGINT)
        _, td_err = td.communicate(timeout=10)
    assert summary["filter"] == "udp"
    assert (summary["received"], summary["foreign"]) == (STAMPED, 0), summary
    # tcpdump's count with the same filter over the same frames: the stream and its trailers, as the
    # kernel counted what passed tcpdump's filter (a tcpdump slowed by a busy host may not have
    # written them all when it is stopped; the kernel's count does not wait for it).
    passed = re.search(r"^(\d+) packets? received by filter", td_err, re.M)
    assert passed, td_err
    assert summary["packets"] == int(passed[1]) == STAMPED + summary["trailer"]["seen"], (summary, td_err)
    assert len(tool("tcpdump", "-nn", "-r", str(out)).splitlines()) <= int(passed[1])

    summary, _ = capture_while(tb, [*args, "--filter", "not udp"], _send_both(tb, tmp_path), interrupt=True)
    assert summary["filter"] == "not udp"
    assert (summary["received"], summary["foreign"], summary["packets"]) == (0, FOREIGN, FOREIGN), summary
    # The frames the filter kept out were never queued to the socket: the kernel counts none of them.
    assert summary["kernel"]["packets"] == FOREIGN and summary["kernel"]["drops"] == 0, summary


def test_a_bad_filter_is_libpcaps_own_message_in_one_line(tb):
    p = run_capbench("capture", "--netns", tb.cap_ns, "-i", tb.cap_if, "udp", "port", timeout=30)
    assert p.returncode == 2 and p.stdout == "", p
    assert p.stderr.strip().splitlines() == ["capbench-cap: bad filter 'udp port': can't parse filter expression: "
                                             "syntax error"], p.stderr
    p = run_capbench("capture", "--netns", tb.cap_ns, "-i", tb.cap_if, "-b", "afxdp", "udp", timeout=30)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "pcap, raw, afp-v2, afp-v3, fanout" \
        in p.stderr, p.stderr
