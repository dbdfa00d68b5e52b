"""Fixtures: fake capbench-gen/-cap/-xdpcount (and a capbench-witness that ends at once) that speak the JSON Lines of docs/programs.md.

They let the Measurer and the process handling run without root; their --describe is the
real build's (what the C programs declare: capbench.declared), so that needs `ninja -C build`.
Their behaviour comes from FAKE_* environment variables (inherited by the children).
"""

import os
import stat
import sys
import textwrap
from datetime import timedelta

import pytest
from capbench.binaries import PROGRAMS, find_program, repo_dir
from capbench.errors import UsageError
from hypothesis import HealthCheck, settings

# Hypothesis profiles of the fuzz harnesses (tests/py/test_fuzz_*.py), chosen by $HYPOTHESIS_PROFILE:
# "default" runs 1,000 generated inputs per parser (fewer where one input draws a report:
# fuzzing.examples); "ci" (`make test`) 300 of them, derandomized, so that all harnesses together
# stay near a minute of `make test` on a 2-CPU machine (1,000 took 7 CPU-minutes there); "fuzz"
# (`make fuzz`) runs 20,000. No example database: a run leaves nothing behind, and every
# failure found is kept as an @example in its harness.
_FUZZ = dict(deadline=timedelta(seconds=5), database=None, print_blob=True,
             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                    HealthCheck.function_scoped_fixture])
settings.register_profile("default", max_examples=1000, **_FUZZ)
settings.register_profile("ci", max_examples=300, derandomize=True, **_FUZZ)
settings.register_profile("fuzz", max_examples=20000, **_FUZZ)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

FAKE_PROGRAM = textwrap.dedent(
    """\
    import json, os, signal, sys, time

    name = os.path.basename(sys.argv[0])
    args = sys.argv[1:]
    env = os.environ
    opt_engine = args[args.index("--engine") + 1] if "--engine" in args else "xdp"
    if args == ["--describe"]:  # what the programs declare is the real build's (capbench.declared)
        os.execv(os.path.join(REAL_BUILD, name), [name, "--describe"])
    if name == "capbench-witness":  # a fake run watches no host: it ends, and the run says why (witness.why_not)
        print(name + ": the unit tests' fake watches nothing", file=sys.stderr)
        sys.exit(1)
    if name == "capbench-gen" and "--check" in args:  # sends nothing: the real one checks, no call is logged
        if "--probe" in args and opt_engine == "xdp" and env.get("FAKE_NO_LIVE_FRAMES"):
            print(name + ": this kernel refuses to run XDP programs on live frames (BPF_PROG_RUN with "
                  "BPF_F_TEST_XDP_LIVE_FRAMES: Operation not permitted, for every process): use --engine xdploop or afpacket",
                  file=sys.stderr)
            sys.exit(2)
        if "--probe" in args and opt_engine == "xdploop" and env.get("FAKE_NO_XDP_LOOP"):
            print(name + ": the xdploop engine cannot make a network namespace of its own here (Operation "
                  "not permitted): use --engine afpacket", file=sys.stderr)
            sys.exit(2)
        os.execv(os.path.join(REAL_BUILD, name), [name] + [a for a in args if a != "--probe"])
    with open(env["FAKE_LOG"], "a") as log:
        log.write(json.dumps([name] + args) + "\\n")

    def opt(flag, default=None):
        return args[args.index(flag) + 1] if flag in args else default

    def out(**obj):
        print(json.dumps(obj), flush=True)

    if "--help" in args:
        print("usage: " + name + " --iface IF [fake options]")
        sys.exit(0)

    fail = env.get("FAKE_FAIL", "")
    if fail == name:
        print(name + ": cannot attach to " + str(opt("--iface")) + ": No such device", file=sys.stderr)
        sys.exit(2)

    stop = False
    def on_term(signum, frame):
        global stop
        stop = True
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    if name == "capbench-gen":
        duration = float(opt("--duration", "0.2"))
        time.sleep(duration)
        sent = int(env.get("FAKE_SENT", "1000"))
        out(type="interval", at=float(int(time.time())), t_s=duration, sent=sent, pps=sent / duration)
        size = opt("--size")
        if size.isdigit():
            shape = dict(frame_len=int(size), mean_frame_len=float(size))
        else:  # a profile: what the real generator says of its mix (here an even 64/1518 one)
            shape = dict(mean_frame_len=791.0, target_pps=float(env.get("FAKE_TARGET_PPS", "100000")),
                         wire_bytes=sent * 811)
        out(type="summary", engine=opt("--engine"), iface=opt("--iface"), size=size, **shape,
            sent=sent, duration_s=duration, achieved_pps=sent / duration, cpu=opt("--cpu"),
            max_lag_ns=int(env.get("FAKE_MAX_LAG_NS", "0")))
        sys.exit(0)

    if env.get("FAKE_HANG") == name:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    if env.get("FAKE_NO_READY") == name:
        while not stop:
            time.sleep(0.01)
        sys.exit(0)
    out(type="ready", iface=opt("--iface"), backend=opt("--backend"))
    t0 = time.process_time()
    deadline = time.monotonic() + float(opt("--duration")) if opt("--duration") else None
    while not stop and (deadline is None or time.monotonic() < deadline):
        if name == "capbench-cap" and env.get("FAKE_BUSY"):
            pass  # burn CPU, like a counter at work
        else:
            time.sleep(0.005)
    if name == "capbench-xdpcount":
        out(type="summary", iface=opt("--iface"), packets=int(env.get("FAKE_DELIVERED", "1000")),
            bytes=0, capbench=int(env.get("FAKE_DELIVERED", "1000")))
    else:
        # afxdp and xdp bring their own XDP program: it counts "delivered" (docs/programs.md)
        own_xdp = {"delivered": int(env.get("FAKE_DELIVERED", "1000"))} if opt("--backend") in ("afxdp", "xdp") else {}
        out(type="summary", backend=opt("--backend"), iface=opt("--iface"), duration_s=1.0, **own_xdp,
            packets=int(env.get("FAKE_RECEIVED", "1000")) + 3,
            received=int(env.get("FAKE_RECEIVED", "1000")), foreign=3, lost=int(env.get("FAKE_SEQ_LOST", "0")),
            duplicates=1, reordered=2, max_seq=999, kernel_drops=int(env.get("FAKE_KDROPS", "0")),
            lengths=json.loads(env.get("FAKE_LENGTHS", "{}")),
            kernel={"packets": 1000, "drops": int(env.get("FAKE_KDROPS", "0"))}, cpu=opt("--cpu"),
            **({"ring_bytes": int(env["FAKE_RING_BYTES"])} if "FAKE_RING_BYTES" in env else {}))
    """
)


@pytest.fixture
def fake_build(tmp_path, monkeypatch):
    """A build directory of fake programs; $CAPBENCH_BUILD_DIR points at it. Yields its log path."""
    build = tmp_path / "build"
    build.mkdir()
    try:  # the programs whose --describe the fakes give: those capbench would run here
        real = find_program("capbench-cap").parent
    except UsageError:
        real = repo_dir() / "build"
    for name in PROGRAMS:
        path = build / name
        path.write_text(f"#!{sys.executable}\nREAL_BUILD = {str(real)!r}\n" + FAKE_PROGRAM)
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    log = tmp_path / "calls.jsonl"
    log.touch()
    monkeypatch.setenv("CAPBENCH_BUILD_DIR", str(build))
    monkeypatch.setenv("FAKE_LOG", str(log))
    for var in [v for v in os.environ if v.startswith("FAKE_") and v != "FAKE_LOG"]:
        monkeypatch.delenv(var)
    return log
