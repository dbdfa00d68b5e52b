"""What capbench reads of a capture program (trial/program_run.py, trial/apps.py): its files only
inside the trial's own folder, opened without following a link or waiting on a FIFO, regular and
bounded; its output matched line by line as it arrives; its 32-bit counters unwrapped against
capbench's own counts, and said so (issue 27, items 2, 4 and 6)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from capbench.testbed.procs import ChildSet
from capbench.trial import apps, loss_layers
from capbench.trial.apps import AdapterError, CountError
from capbench.trial.measure import scratch_dir, unwrap_program_counts
from capbench.trial.program_run import ProgramFileError, ProgramRun, open_in_folder

from records import make_result

SUSPICIOUS = "secret-content-of-the-victim"


def adapter_file(source: str) -> str:
    return ("# an adapter\n[p]\ncommand = \"p -i {iface} -l {outdir}\"\n\n"
            f"[p.counts.captured]\nsource = \"{source}\"\njson_path = \"stats.pkts\"\nmeaning = \"m\"\n")


@pytest.mark.parametrize("source", [
    "file:{outdir}/../../../etc/shadow", "file:/dev/zero", "file:/etc/shadow", "file:{outdir}/a/../../x",
    "file:{outdir}/", "file:{outdir}//x", "file:{outdir}/./x", "file:{out}/x", "file:{outdir}/{outdir}",
    "file:{outdir}/{out}", "file:x.json", "file:{outdir}/a b",
])
def test_a_file_count_outside_the_trial_folder_is_refused_at_load(tmp_path, source):
    f = tmp_path / "mine.toml"
    f.write_text(adapter_file(source))
    with pytest.raises(AdapterError) as e:
        apps.load_file(f)
    msg = str(e.value)
    # One line naming the file and the line of the source, never the path it names.
    assert "\n" not in msg and e.value.exit_status == 2
    assert msg.startswith(f"{f}:6: [p.counts.captured] source: its file: path must ")
    assert "shadow" not in msg and "/dev/zero" not in msg and "stay in the trial's folder" in msg


def test_the_line_of_an_inline_count_is_named(tmp_path):
    f = tmp_path / "inline.toml"
    f.write_text('[p]\ncommand = "p -i {iface}"\n[p.counts]\n\ncaptured = { source = "file:/etc/shadow", '
                 'pattern = "(\\\\d+)", meaning = "m" }\n')
    with pytest.raises(AdapterError, match=re.escape(f"{f}:5: [p.counts.captured] source: its file: path must ")):
        apps.load_file(f)


@pytest.mark.parametrize("source", ["file:{outdir}/eve.json", "file:{outdir}/log/{iface}-{cpu}.json", "file:{out}"])
def test_a_file_count_inside_the_trial_folder_loads(tmp_path, source):
    f = tmp_path / "mine.toml"
    f.write_text(adapter_file(source))
    assert apps.load_file(f)["p"].counts[0].source == source


# --- open_in_folder ---------------------------------------------------------------------------


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "trial"
    (d / "sub").mkdir(parents=True)
    return d


@pytest.fixture
def victim(tmp_path):
    v = tmp_path / "victim"
    v.write_text(SUSPICIOUS + "\n")
    return v


def read_fd(fd: int) -> str:
    with os.fdopen(fd) as f:
        return f.read()


def test_open_in_folder_reads_a_regular_file(folder):
    (folder / "sub" / "eve.json").write_text("hello\n")
    assert read_fd(open_in_folder(folder, folder / "sub" / "eve.json")) == "hello\n"


@pytest.mark.parametrize("plant", ["link", "dirlink", "fifo", "dir", "outside", "dotdot", "big", "missing"])
def test_open_in_folder_refuses(folder, victim, plant):
    path = folder / "sub" / "eve.json"
    if plant == "link":
        path.symlink_to(victim)
    elif plant == "dirlink":
        os.rmdir(folder / "sub")
        (folder / "sub").symlink_to(victim.parent)
        path = folder / "sub" / "victim"
    elif plant == "fifo":
        os.mkfifo(path)
    elif plant == "dir":
        path.mkdir()
    elif plant == "outside":
        path = victim
    elif plant == "dotdot":
        path = folder / "sub" / ".." / ".." / "victim"
    elif plant == "big":
        with open(path, "wb") as f:
            f.truncate(2 << 20)
    t0 = time.monotonic()
    with pytest.raises(ProgramFileError) as e:
        open_in_folder(folder, path, max_bytes=1 << 20)
    assert time.monotonic() - t0 < 1  # a FIFO is not waited on
    why = {"link": "symbolic link", "dirlink": "symbolic link", "fifo": "a FIFO, not a regular file",
           "dir": "a folder, not a regular file", "outside": "outside the trial's folder",
           "dotdot": "outside the trial's folder", "big": "more than the 1 MiB", "missing": "No such file"}[plant]
    assert why in str(e.value) and SUSPICIOUS not in str(e.value)
    assert victim.read_text() == SUSPICIOUS + "\n"


# --- a program run: its files and its output -------------------------------------------------


def sleeper(tmp_path: Path, counts: str, post: str = "") -> apps.Adapter:
    """An adapter of a program that waits for SIGTERM, then exits 0."""
    script = tmp_path / "sleeper.py"
    script.write_text("import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n"
                      "print('ready', file=sys.stderr, flush=True)\ntime.sleep(30)\n")
    return apps.parse(f'[p]\ncommand = "{sys.executable} {script} {{iface}}"\nready = {{ pattern = "ready" }}\n'
                      f'stop = {{ signal = "SIGTERM" }}\n{post}' + counts, "t.toml")["p"]


def run_program(workdir: Path, app: apps.Adapter, *, plant=None) -> ProgramRun:
    prog = ProgramRun(app, None, "lo", None, 0.2, workdir)
    with ChildSet() as kids:
        prog.start(kids)
        if plant:
            plant(prog)
        prog.wait_ready(5)
        prog.wait_stopped(prog.signal_stop())
    return prog


EVE_COUNT = '[p.counts.captured]\nsource = "file:{outdir}/eve.json"\njson_path = "stats.pkts"\nmeaning = "m"\n'


def test_a_fifo_planted_at_a_file_count_fails_the_trial_at_once(tmp_path):
    app = sleeper(tmp_path, EVE_COUNT)
    with scratch_dir() as workdir:
        t0 = time.monotonic()
        prog = run_program(workdir, app, plant=lambda p: os.mkfifo(p.outdir / "eve.json"))
        assert time.monotonic() - t0 < 5
    assert re.search(r"count 'captured' reads \{outdir\}/eve.json, which capbench did not read: it is a FIFO",
                     prog.failure)


def test_a_link_planted_at_a_file_count_is_not_followed(tmp_path, victim):
    app = sleeper(tmp_path, EVE_COUNT)
    victim.write_text('{"stats": {"pkts": 7}}\n')
    with scratch_dir() as workdir:
        prog = run_program(workdir, app, plant=lambda p: (p.outdir / "eve.json").symlink_to(victim))
    assert "symbolic link" in prog.failure and "pkts" not in prog.failure and prog.counts == {}


def test_counts_are_matched_as_the_lines_arrive_and_nothing_else_is_kept(tmp_path):
    # 200,000 lines (6 MB) on stdout, its count among them, then its ready and count lines on stderr.
    code = ("import sys, signal, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: (print(\"got 41\", file=sys.stderr, flush=True), sys.exit(0)))\n"
            "print(\"ready\", file=sys.stderr, flush=True)\n"
            "for i in range(200000): print(f\"line {i} of a chatty program\")\n"
            "print(\"total 99\", flush=True)\n"
            "time.sleep(30)\n")
    script = tmp_path / "chatty.py"
    script.write_text(code)
    counts = ('[p.counts.captured]\nsource = "stderr"\npattern = "got (\\\\d+)"\nmeaning = "m"\n'
              '[p.counts.total]\nsource = "stdout"\npattern = "^total (\\\\d+)"\nmeaning = "m"\n')
    app = apps.parse(f'[p]\ncommand = "{sys.executable} {script} {{iface}}"\n'
                     f'ready = {{ pattern = "ready", delay_s = 0 }}\nstop = {{ signal = "SIGTERM" }}\n' + counts,
                     "t.toml")["p"]
    with scratch_dir() as workdir:
        prog = ProgramRun(app, None, "lo", None, 0.2, workdir)
        with ChildSet() as kids:
            prog.start(kids)
            prog.wait_ready(5)
            deadline = time.monotonic() + 30
            while not prog.child.stdout_lines or prog.child.stdout_lines[-1] != "total 99":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            prog.wait_stopped(prog.signal_stop())
    assert not prog.failure, prog.failure
    assert prog.counts == {"captured": 41, "total": 99}
    assert len(prog.child.stdout_lines) < 64 and prog.witness(1.0)["stdout_tail"][-1] == "total 99"


def test_a_program_that_drops_privileges_gets_its_own_out_and_outdir(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    app = apps.parse('[p]\ncommand = "p -i {iface} -w {out} -l {outdir}"\nfile_format = "pcap"\ndrops_to = "nobody"\n',
                     "t.toml")["p"]
    with scratch_dir() as scratch:
        workdir = scratch / "0"  # a side's folder in the trial's, as trial_run makes it
        workdir.mkdir()
        (workdir / "p-0.pcap").symlink_to(tmp_path / "x")  # anything already there: refused, not followed
        prog = ProgramRun(app, None, "lo", None, 0.2, workdir)
        with pytest.raises(FileExistsError):
            prog.make_files()
        (workdir / "p-0.pcap").unlink()
        os.rmdir(prog.outdir)
        prog.make_files()
        nobody = app.drop_ids()
        for folder in (scratch, workdir):
            assert (os.stat(folder).st_mode & 0o7777, os.stat(folder).st_uid) == (0o711, 0)
        for path in (prog.outdir, prog.out):
            st = os.lstat(path)
            assert (st.st_uid, st.st_gid) == nobody and st.st_mode & 0o777 in (0o700, 0o600)
        assert not prog.file_written  # empty until the program writes
        # The user it drops to, without any capability, can write both; not list the folder.
        as_nobody = ["setpriv", f"--reuid={nobody[0]}", f"--regid={nobody[1]}", "--clear-groups", "--inh-caps=-all"]
        write = f"echo frames > {prog.out} && echo stats > {prog.outdir}/eve.json"
        assert subprocess.run([*as_nobody, "sh", "-c", write], capture_output=True).returncode == 0
        assert subprocess.run([*as_nobody, "ls", workdir], capture_output=True).returncode != 0
        assert prog.file_written
    assert not (tmp_path / "x").exists()


def test_a_program_that_keeps_its_privileges_has_a_closed_folder():
    app = apps.builtin()["dumpcap"]
    with scratch_dir() as workdir:
        ProgramRun(app, None, "lo", None, 0.2, workdir).make_files()
        assert os.stat(workdir).st_mode & 0o7777 == 0o700
        assert not any(os.stat(p).st_mode & 0o077 for p in workdir.iterdir())


def test_no_scratch_folder_is_writable_by_others():
    # The whole of trial/: no chmod to a mode others may write.
    for path in Path(apps.__file__).parent.glob("*.py"):
        assert not re.search(r"0o[0-7]?[0-7][0-7][2367]\b", path.read_text()), path


def test_the_post_command_is_streamed_and_bounded(tmp_path):
    post = tmp_path / "post.py"
    post.write_text("for _ in range(100000): print('x' * 100)\nprint('sum 5')\n")
    app = sleeper(tmp_path, '[p.counts.captured]\nsource = "post"\npattern = "^sum (\\\\d+)"\nmeaning = "m"\n',
                  post=f'post = "{sys.executable} {post}"\n')
    with scratch_dir() as workdir:
        prog = run_program(workdir, app)
    assert not prog.failure and prog.counts == {"captured": 5}


# --- 32-bit counters ------------------------------------------------------------------------


def test_unwrap_count():
    w = 1 << 32
    assert apps.unwrap_count(5, 32, None) == (5, 0)
    assert apps.unwrap_count(5, 32, 5) == (5, 0)
    assert apps.unwrap_count(5, 32, w + 5) == (w + 5, 1)
    assert apps.unwrap_count(5, 32, 3 * w + 2) == (3 * w + 5, 3)  # a little behind the reference
    assert apps.unwrap_count(w - 10, 32, 2 * w + 10) == (2 * w - 10, 1)
    assert apps.unwrap_count(100, 32, 50) == (100, 0)  # above the reference: never wrapped down
    assert apps.unwrap_count(5, 64, 3 * w) == (5, 0)


def test_a_wrapped_tcpdump_count_is_unwrapped_against_the_file_and_said_so():
    w = 1 << 32
    tcpdump = apps.builtin()["tcpdump"]
    assert {c.name: c.bits for c in tcpdump.counts} == {"captured": 32, "seen": 32, "dropped": 32, "ifdropped": 32}
    file_frames, delivered, dropped = w + 1000, w + 1500, 400
    witness = {"name": "tcpdump", "counts": {"captured": 1000, "seen": 1400, "dropped": dropped, "ifdropped": 0},
               "bits": {c.name: c.bits for c in tcpdump.counts}}
    summary = {"file_frames": file_frames, "received": file_frames, "kernel_drops": dropped}
    unwrap_program_counts(witness, summary, delivered)
    assert witness["counts"] == {"captured": w + 1000, "seen": w + 1400, "dropped": 400, "ifdropped": 0}
    assert witness["wrapped"] == {"captured": {"times": 1, "printed": 1000, "bits": 32},
                                  "seen": {"times": 1, "printed": 1400, "bits": 32}}
    r = make_result(backend="tcpdump", app_command="tcpdump -i x -w y", app_counts=witness["counts"],
                    raw={"programs": [witness]}, file_frames=file_frames)
    said = [line for line in loss_layers.program_remarks(r) if "wrapped" in line]
    assert said == [f"tcpdump's 32-bit 'captured' counter wrapped 1 time: it printed 1,000, capbench counts "
                    f"{w + 1000:,} (against its file and the delivered frames)",
                    f"tcpdump's 32-bit 'seen' counter wrapped 1 time: it printed 1,400, capbench counts "
                    f"{w + 1400:,} (against its file and the delivered frames)"]


def test_an_unwrapped_count_is_left_alone():
    witness = {"name": "tcpdump", "counts": {"captured": 1000}, "bits": {"captured": 32}}
    summary = {"file_frames": 1000, "received": 1000}
    unwrap_program_counts(witness, summary, 1200)
    assert witness == {"name": "tcpdump", "counts": {"captured": 1000}, "bits": {"captured": 32}}


def test_a_program_whose_filter_excludes_the_stream_is_said_to_have_seen_nothing():
    """Issue 28 item 8: `tcpdump -i x -w y port 9` captures none of capbench's stream; the account
    read that as 100 % "no counter explains". The remarks say the program saw none of it, by its
    own count; a program that captured some is not said to have seen nothing."""
    r = make_result(backend="tcpdump", app_command="tcpdump -i x -w y port 9", received=0, file_frames=0,
                    app_counts={"captured": 0, "seen": 0, "dropped": 0, "ifdropped": 0})
    assert loss_layers.saw_nothing(r)
    said = [line for line in loss_layers.program_remarks(r) if "saw none" in line]
    assert said == [f"tcpdump saw none of the {r.delivered:,} frames delivered to its interface (its own count: "
                    f"seen 0, captured 0): its capture filter or settings exclude the stream; its loss is that, "
                    f"not a layer's"]
    some = make_result(backend="tcpdump", app_command="tcpdump -i x -w y", received=10, file_frames=10,
                       app_counts={"captured": 10, "seen": 10, "dropped": 0})
    assert not loss_layers.saw_nothing(some)
    assert not loss_layers.saw_nothing(make_result(received=0))  # capbench's own counter: no program


def test_a_counter_whose_filter_excludes_the_stream_is_said_to_have_matched_none():
    """capbench-cap with --filter (issue 28 item 8): a filter that excludes capbench's stream is said
    to, with what the kernel queued to the socket; with no filter, or frames received, nothing is said."""
    cap = {"filter": "not udp", "kernel": {"packets": 0, "drops": 0}}
    r = make_result(backend="afp-v3", received=0, raw={"cap": cap})
    said = [line for line in loss_layers.remarks(r) if "filter" in line]
    assert said == [f"capbench-cap's filter 'not udp' matched none of the {r.delivered:,} frames delivered to its "
                    f"interface (the kernel queued 0 frames to its socket): the filter excludes the stream; its "
                    f"loss is that, not a layer's"]
    assert not loss_layers.filter_remarks(make_result(backend="afp-v3", received=0, raw={"cap": {}}))
    assert not loss_layers.filter_remarks(make_result(backend="afp-v3", received=10, raw={"cap": cap}))
