"""Resuming a run directory whose last line a crash cut short (RunWriter.resume)."""

import json
import shutil

import pytest
from capbench.errors import UsageError
from capbench.campaign.results import (
    SEARCHES_FILE,
    TRIALS_FILE,
    RunWriter,
    drop_cut_line,
    read_outcomes,
    read_run,
    scan_trials,
)
from records import make_result
from report_files import FIXTURE


def crashed_run(tmp_path, trials=5):
    """A run that died while writing its 6th trial (and an answer): run.json still says running."""
    w = RunWriter.create(tmp_path, {"sizes": [64]})
    results = [make_result(sent=1000 + i) for i in range(trials)]
    for r in results:
        w.append(r)
    w.append_outcome({"step": "a", "method": "rfc2544"})
    w._trials.close()  # the process is gone: nothing more gets written, run.json is left as it was
    cut = json.dumps(make_result(sent=9999).to_record())[:70]
    with open(w.path / TRIALS_FILE, "a") as f:
        f.write(cut)
    with open(w.path / SEARCHES_FILE, "a") as f:
        f.write('{"step": "b", "meth')
    return w.path, results, len(cut.encode())


def test_resume_drops_a_cut_last_line_before_appending(tmp_path, capsys):
    path, results, cut_bytes = crashed_run(tmp_path)
    assert [(s.line, s.kind) for s in scan_trials(path).skipped] == [(6, "truncated")]

    w = RunWriter.resume(path)
    assert w.count == 5
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2  # one line per file
    assert str(path / TRIALS_FILE) in err[0] and f"({cut_bytes} bytes)" in err[0] and "cut short" in err[0]
    assert str(path / SEARCHES_FILE) in err[1] and "(19 bytes)" in err[1]

    new = make_result(sent=4242)
    w.append(new)
    w.append_outcome({"step": "b", "method": "rfc2544"})
    w.finish()
    scan = scan_trials(path)
    assert scan.skipped == []  # was [(6, "corrupt")]: the new trial glued onto the cut line
    assert scan.trials == [*results, new]
    assert [o["step"] for o in read_outcomes(path)] == ["a", "b"]
    meta = read_run(path)
    assert meta["status"] == "complete" and meta["trials"] == 6 and len(meta["resumed_at"]) == 1


def test_resume_of_whole_files_changes_nothing_and_says_nothing(tmp_path, capsys):
    w = RunWriter.create(tmp_path, {})
    w.append(make_result())
    w.finish("interrupted")
    before = (w.path / TRIALS_FILE).read_bytes()
    RunWriter.resume(w.path).finish()
    assert (w.path / TRIALS_FILE).read_bytes() == before
    assert not (w.path / SEARCHES_FILE).exists()  # not made by resuming
    assert capsys.readouterr().err == ""


def test_a_last_record_that_lacks_only_its_newline_is_kept(tmp_path, capsys):
    a, b = make_result(sent=1), make_result(sent=2)
    (tmp_path / TRIALS_FILE).write_text(json.dumps(a.to_record()) + "\n" + json.dumps(b.to_record()))
    assert drop_cut_line(tmp_path / TRIALS_FILE) == 0
    assert (tmp_path / TRIALS_FILE).read_text().endswith("}\n")
    assert scan_trials(tmp_path).trials == [a, b]
    assert capsys.readouterr().err == ""


def test_drop_cut_line_edge_cases(tmp_path):
    f = tmp_path / "x.jsonl"
    assert drop_cut_line(f) == 0 and not f.exists()
    f.write_bytes(b"")
    assert drop_cut_line(f) == 0 and f.read_bytes() == b""
    f.write_bytes(b'{"only": "cut')  # the first line was cut: nothing is left
    assert drop_cut_line(f) == 13 and f.read_bytes() == b""
    # A cut line longer than the 64 KiB the file is read back in, bytes that are not UTF-8.
    head = b'{"a": 1}\n' * 3
    tail = b'{"big": "' + b"x" * 200_000 + b"\xff\xfe"
    f.write_bytes(head + tail)
    assert drop_cut_line(f) == len(tail) and f.read_bytes() == head
    assert drop_cut_line(f) == 0 and f.read_bytes() == head
    f.write_bytes(head + b"[1, 2]")  # JSON, but no record: cut
    assert drop_cut_line(f) == 6 and f.read_bytes() == head


@pytest.mark.parametrize("name", ["trials.jsonl", "searches.jsonl", ".run.json.tmp"])
def test_a_link_in_the_results_folder_is_never_written_through(tmp_path, name):
    """capbench runs as root: a link planted in a results folder another user can write (here
    to a file standing for /etc/shadow) must not have --resume append to, cut or overwrite the
    file it leads to. trials.jsonl and searches.jsonl are refused; a stale .run.json.tmp is
    replaced, not followed."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(victim)
    try:
        w = RunWriter.resume(run)
        w.append_outcome({"method": "x"})
        w.finish("interrupted")
        assert name == ".run.json.tmp"
    except UsageError as e:
        assert name != ".run.json.tmp" and "symbolic link" in str(e)
    assert victim.read_text() == "precious\n"
