"""`capbench testbed up|down|status`: a veth test bed built and kept for work by hand, removed,
or listed with its owner and the host settings test beds hold."""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path

from capbench import owners
from capbench.campaign.results import read_run
from capbench.cli.described import from_declarations, own_xdp_names
from capbench.errors import UsageError
from capbench.remote import ssh
from capbench.testbed import host_sysctl, hygiene, preflight, rxmode
from capbench.testbed import veth_pair as testbed
from capbench.trial import measure


def rx_mode_of(args: argparse.Namespace, resume: Path | None) -> tuple[str, str]:
    """The receive model of a run (checked), a resumed run's own from its run.json. A run on ports
    records the NIC's ("nic", not capbench's to set): there `args` are the flags it started with."""
    bed = ((read_run(resume) or {}).get("testbed") or {}) if resume is not None else {}
    if resume is not None and not bed.get("ports"):
        mode, sched = bed.get("rx_mode", "rps"), bed.get("napi_sched")
    else:
        mode, sched = args.rx_mode or rxmode.DEFAULT_RX_MODE, args.napi_sched
    rxmode.check_mode(mode)
    sched = rxmode.NapiSched.parse(sched or rxmode.default_sched(mode)).text
    rxmode.check_available(mode)
    return mode, sched


def cmd_testbed(args: argparse.Namespace) -> int:
    if getattr(args, "backlog", None) is not None:
        host_sysctl.check_backlog(args.backlog)
    if args.action != "status":  # listing needs no capabilities
        preflight.require_caps(f"capbench testbed {args.action}", preflight.TESTBED_CAPS)
    preflight.require_ip()
    return {"up": _up, "down": _down, "status": _status}[args.action](args)


def _up(args: argparse.Namespace) -> int:
    """Build a test bed and keep it; say how to use it by hand and how to remove it."""
    if args.rx_cpu is not None:
        preflight.check_cpus(rx_cpu=args.rx_cpu)
    rx_mode, napi_sched = rx_mode_of(args, None)
    with testbed.sigterm_raises():
        # The owner is this short-lived process: the test bed stays until `testbed down`.
        tb = testbed.create(args.rx_cpu, purpose="testbed up", backlog=args.backlog, rx_mode=rx_mode,
                            napi_sched=napi_sched, keep=True)
    print(f"test bed {tb.id}")
    print(f"  generator side: namespace {tb.gen_ns}  interface {tb.gen_if}  MAC {tb.gen_mac}")
    print(f"  capture side:   namespace {tb.cap_ns}  interface {tb.cap_if}  MAC {tb.cap_mac}")
    # afpacket: the xdp engine's frames reach the capture veth only while an XDP program is attached
    # there (the note below); a frame capbench gen sends must arrive whatever captures it.
    print(f"  send with: capbench gen --netns {tb.gen_ns} --iface {tb.gen_if} --engine afpacket --rate 100kpps  "
          f"(to {tb.dst_mac}, which no interface has: the capture side sees other-host frames; capbench-gen "
          f"itself: --dst-mac {tb.dst_mac})")
    if tb.rx_mode == "cpumap":
        if tb.rx_cpu is None:  # measure.Measurer.rx_model: no ring without a receive CPU
            print("  kernel receive work on the capture side: a NAPI thread where the scheduler puts it (a cpumap "
                  "ring needs a receive CPU: up with --rx-cpu CPU)")
        else:
            print(f"  kernel receive work on the capture side: the kernel thread of a cpumap ring on CPU {tb.rx_cpu} "
                  f"with {tb.napi_sched}, made per trial; by hand: `capbench xdpcount --netns {tb.cap_ns} "
                  f"--iface {tb.cap_if} --ring {rxmode.DEFAULT_RX_RING} --ring-cpu {tb.rx_cpu}`; the veth's own "
                  f"poll runs on the sending CPU")
    elif tb.rx_mode == "napi":
        where = "the CPU the scheduler picks (no --rx-cpu)" if tb.rx_cpu is None else f"CPU {tb.rx_cpu}"
        print(f"  kernel receive work on the capture side: a NAPI thread, to go on {where} with {tb.napi_sched}")
        print(f"  note: the kernel starts the thread napi/{tb.cap_if}-N when an XDP program is attached; "
              f"`capbench run` places it per trial; by hand: `echo 1 > /sys/class/net/{tb.cap_if}/threaded` "
              f"in {tb.cap_ns}, then `taskset -pc CPU PID` and `chrt -f -p PRIO PID`")
    else:
        rps = "not steered (the sending CPU)" if tb.rx_cpu is None else f"CPU {tb.rx_cpu} (RPS)"
        print(f"  kernel receive work on the capture side: {rps}")
    if args.backlog is not None:
        print(f"  net.core.netdev_max_backlog: at least {args.backlog} until `down`")
    print(f"  note: frames of the xdp engine reach {tb.cap_if} only while an XDP program is attached")
    print(f"  there (veth needs it for NAPI): run `capbench xdpcount --netns {tb.cap_ns} --iface {tb.cap_if}`,")
    own_xdp = from_declarations(lambda: " or ".join(own_xdp_names()), "NAME of one with its own XDP program")
    print(f"  capture with --backend {own_xdp} (they attach their own), or send with --engine afpacket")
    print(f"remove it with: capbench testbed down {tb.id}")
    return 0


def _down(args: argparse.Namespace) -> int:
    """Remove test bed ID (not under a running owner without --force), with the programs and folders
    of its run if that run was killed; or every one a crashed run left: no running capbench owns it
    and `testbed up` did not build it to be kept, and the programs and folders of every capbench
    that was killed."""
    if args.force and args.id is None:
        raise UsageError("--force needs the ID of the test bed to remove: see `capbench testbed status`")
    if args.id is not None:
        if not re.fullmatch(r"[0-9a-f]{6}", args.id):
            raise UsageError(f"{args.id!r} is not a test bed id (6 hex digits): see `capbench testbed status`")
        st = testbed.read_state(args.id) or {}
        alive = testbed.owner_alive(st)
        if alive and not args.force:
            raise UsageError(f"test bed {args.id} is in use by pid {st.get('owner_pid')} "
                             f"({st.get('purpose', 'run')}): let that run end (it removes its test bed), "
                             f"or add --force to remove it under the run")
        owner = st.get("owner_pid")
        # A killed run's programs first: they may hold its namespaces. A running owner's are its
        # own to end (its run group holds the programs of its other trials too).
        if isinstance(owner, int) and not alive:
            _say(hygiene.end_programs_of(owner, st.get("owner_start_ticks")))
        if not testbed.destroy(args.id):
            raise UsageError(f"no test bed {args.id}: see `capbench testbed status`")
        print(f"removed test bed {args.id}")
        if isinstance(owner, int) and not alive:  # a running owner removes its own folders
            _remove_folders(owner)
        return 0
    _say(hygiene.end_stale_programs())
    removed, kept = testbed.destroy_stale()
    # Settings held without a test bed (a real interface's --nic-set, testbed.nic) by a run that
    # died: put back here too (dead holders are dropped, and their settings restored, at every access).
    owners.HostSettings().held()
    for tb_id in removed:
        print(f"removed test bed {tb_id}")
    for info in kept:
        if info.in_use:
            print(f"kept test bed {info.id}: in use by pid {info.state['owner_pid']}")
        else:
            print(f"kept test bed {info.id}: built by `testbed up` for work by hand: remove it with "
                  f"`capbench testbed down {info.id}`")
    if not removed and not kept:
        print("no test beds")
    _remove_folders(None)
    return 0


# The folders a capbench makes in /tmp, named with its pid: a trial's (a program's capture file,
# --profile's perf data), an SSH master connection's (its socket).
RUN_FOLDERS = {measure.SCRATCH_PREFIX: "trial folder", ssh.MASTER_DIR_PREFIX: "SSH master connection's folder"}


def _remove_folders(pid: int | None) -> None:
    """Remove the folders of capbench process `pid`, or (None) of every capbench that no longer runs."""
    for prefix, what in RUN_FOLDERS.items():
        for path in hygiene.folders_of(prefix, pid):
            shutil.rmtree(path, ignore_errors=True)
            print(f"removed the {what} {path} of a capbench that no longer runs")


def _say(lines: list[str]) -> None:
    for line in lines:
        print(line)


def _status(args: argparse.Namespace) -> int:  # noqa: ARG001
    """Every test bed with its owner, and the host settings test beds hold; the programs of a killed
    capbench that still run."""
    for text in hygiene.stale_programs():
        print(f"{text} (`down` ends them)")
    infos = testbed.list_testbeds()
    if not infos:
        print("no test beds")
        return 0
    for info in infos:
        st = info.state or {}
        if info.in_use:
            owner = f"in use by pid {st.get('owner_pid')} ({st.get('purpose', 'run')})"
        elif info.kept:
            owner = f"kept by `{st.get('purpose', 'testbed up')}` (`down {info.id}` removes it)"
        elif info.state is None:
            owner = "leftover without state file (`down` removes it)"
        else:
            owner = f"{st.get('purpose', 'run')}, no running owner (`down` removes it)"
        if "gen_if" in st:
            rx = "not steered" if st.get("rx_cpu") is None else st["rx_cpu"]
            where = f"{st['gen_ns']}/{st['gen_if']} -> {st['cap_ns']}/{st['cap_if']}, rx CPU {rx}"
        else:
            where = " ".join(info.namespaces) or "(namespaces gone)"
        print(f"{info.id}  {where}  created {st.get('created_at', '?')}  {owner}")
    for path, entry in (item for registry in owners.listed_registries() for item in registry.listed().items()):
        beds = ", ".join(sorted(entry["holders"]))
        print(f"{entry.get('key') or path} = {entry['set']}, held by test bed(s) {beds}: "
              f"back to {entry['original']} when the last of them is removed")
    return 0
