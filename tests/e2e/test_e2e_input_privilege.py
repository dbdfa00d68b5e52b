"""Issue 27, item 6: capbench run by a user who is not root but holds the capabilities
docs/capabilities.md grants (as ambient ones) reads only the files that user may read, and a NUL
byte or a word too long for a command is one line (exit status 2), before anything is built.

The user is a real one, made here with useradd and removed whatever happens. The capabilities are
the documented ones for `capbench run` and the tests' dac_read_search (test_e2e_capabilities.py:
the interpreter lives under /root here), so open() alone would read any file on the machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from capbench.binaries import find_program
from capbench.testbed import preflight
from capbench.testbed import veth_pair as testbed

from e2e_env import capbench_cmd, capbench_env, missing_prerequisite, second_user

pytestmark = [
    pytest.mark.skipif(missing_prerequisite() is not None, reason=str(missing_prerequisite())),
    pytest.mark.skipif(shutil.which("setpriv") is None or shutil.which("useradd") is None,
                       reason="setpriv and useradd are needed to run as another user"),
]

READ_INTERPRETER = ("dac_read_search",)  # as test_e2e_capabilities.py: not one of capbench's needs
SECRET = "cbin-e2e-secret-7c2a"


@pytest.fixture
def user() -> Iterator[tuple[int, int]]:
    """(uid, gid) of a user made for the test (cbin...), removed after it whatever happens."""
    with second_user("cbin") as pw:
        yield pw.pw_uid, pw.pw_gid


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder the user may search and write (their working directory and HOME), outside pytest's
    (/tmp/pytest-of-root is root's alone: a refusal there would say nothing of the file's own mode)."""
    path = Path(tempfile.mkdtemp(prefix="cbin-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


@pytest.fixture
def roots(shared: Path) -> Path:
    """A root-only file (0600) whose first line is SECRET, in a folder the user may search."""
    path = shared / "roots.toml"
    path.write_text(f"{SECRET}\n64,1\n")
    path.chmod(0o600)
    return path


def as_user(user: tuple[int, int], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`capbench ARGS` as `user`, with the capabilities `capbench run` needs, granted as ambient ones;
    its test beds (setpriv execs capbench, so the pid is the one a test bed's state names) must be none."""
    caps = ",".join(f"+{c}" for c in (*preflight.RUN_CAPS, *READ_INTERPRETER))
    argv = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups", f"--inh-caps=-all,{caps}",
            f"--ambient-caps={caps}", *capbench_cmd(*args)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                          stdin=subprocess.DEVNULL, env=capbench_env() | {"HOME": str(cwd)}) as proc:
        out, err = proc.communicate(timeout=120)
    assert "test bed" not in out + err
    assert [b.id for b in testbed.list_testbeds() if (b.state or {}).get("owner_pid") == proc.pid] == []
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def refused(p: subprocess.CompletedProcess, *words: str) -> str:
    """The one line of a refusal (exit status 2) that holds `words`, and no line of the secret file."""
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr[-2000:])
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("capbench: ") and "Traceback" not in p.stderr, p.stderr[-2000:]
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert SECRET not in p.stdout + p.stderr and "root:" not in p.stdout + p.stderr
    return lines[0]


@pytest.fixture
def nothing_left(shared: Path) -> Iterator[Path]:
    """The results folder the runs are given: it must not be there after a refusal."""
    results = shared / "results"
    yield results
    assert not results.exists()


def run_refused(user, shared, results, *args: str) -> subprocess.CompletedProcess:
    # A short trial, should the refusal not come (not with a campaign or topology, which say it).
    short = [] if {"--campaign", "--topology"} & set(args) else ["--duration", "1"]
    return as_user(user, shared, "run", "--results", str(results), *short, *args)


@pytest.mark.parametrize("flag, form, what", [
    ("--sizes", "dist:{}", "dist: file"),
    ("--campaign", "{}", "campaign"),
    ("--topology", "{}", "topology"),
])
def test_a_root_only_file_is_refused(user, shared, roots, nothing_left, flag, form, what):
    p = run_refused(user, shared, nothing_left, flag, form.format(roots))
    refused(p, what, str(roots), f"permission denied to uid {user[0]}, who runs capbench")
    roots.chmod(0o644)  # the same file, the user's to read: read, and refused for what it holds
    p = run_refused(user, shared, nothing_left, flag, form.format(roots))
    assert p.returncode == 2 and "permission denied" not in p.stderr and str(roots) in p.stderr, p.stderr


def test_a_root_only_adapters_file_is_refused(user, shared, roots, nothing_left):
    p = run_refused(user, shared, nothing_left, "--apps-file", str(roots), "--backends", "mydump")
    refused(p, "adapters file", str(roots), f"permission denied to uid {user[0]}")


def test_etc_shadow_as_a_dist_file_is_refused(user, shared, nothing_left):
    refused(run_refused(user, shared, nothing_left, "--sizes", "dist:/etc/shadow"), "'/etc/shadow'",
            "permission denied")


def test_a_campaign_naming_a_root_only_adapters_file(user, shared, roots, nothing_left):
    campaign = shared / "c.toml"
    campaign.write_text(f'[campaign]\nsizes = "64"\nbackends = ["mydump"]\napps_files = ["{roots.name}"]\n')
    campaign.chmod(0o644)
    refused(run_refused(user, shared, nothing_left, "--campaign", str(campaign)), str(roots), "permission denied")


@pytest.mark.parametrize("args", [["gen", "--check", "--mtu", "1500", "--rate", "1kpps", "--dst-mac",
                                   "02:cb:00:00:00:02", "--size", "dist:{}"],
                                  ["gen", "--check", "--mtu", "1500", "--rate", "1kpps", "--replay", "{}"],
                                  ["capture", "--read", "{}"]])
def test_the_programs_refuse_a_root_only_file(user, shared, roots, args):
    # capbench passes these to capbench-gen and capbench-cap as they are: the programs ask themselves.
    p = as_user(user, shared, *(a.format(roots) for a in args))
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert f"permission denied to uid {user[0]}" in p.stderr and str(roots) in p.stderr, p.stderr
    assert SECRET not in p.stdout + p.stderr


def adapters(shared: Path, command: str) -> Path:
    path = shared / "apps.toml"
    path.write_text(f"[mydump]\ncommand = {json.dumps(command)}\nfile_format = \"pcap\"\n")
    path.chmod(0o644)
    return path


def test_a_nul_byte_in_an_adapter_command(user, shared, nothing_left):
    path = adapters(shared, "tcpdump -i {iface} -w {out} x\0y")
    p = run_refused(user, shared, nothing_left, "--apps-file", str(path), "--backends", "mydump")
    refused(p, str(path), "[mydump]", "command holds a NUL byte")


def test_a_200000_character_word_in_an_adapter_command(user, shared, nothing_left):
    path = adapters(shared, "tcpdump -i {iface} -w {out} " + "A" * 200_000)
    p = run_refused(user, shared, nothing_left, "--apps-file", str(path), "--backends", "mydump")
    refused(p, str(path), "[mydump]", "command is 200,028 bytes long")


def test_a_nul_byte_in_a_campaigns_apps_and_a_topologys_capbench(user, shared, nothing_left):
    campaign = shared / "c.toml"
    campaign.write_text('[campaign]\nsizes = "64"\nbackends = ["mydump"]\n'
                        'apps = {mydump = "tcpdump -i {iface} -w {out} \\u0000"}\n')
    topology = shared / "t.toml"
    topology.write_text('[hosts.s1]\nssh = "root@s1"\ncapbench = "capbench \\u0000"\n[generator]\nhost = "local"\n'
                        'iface = "eth1"\n[[sensor]]\nhost = "s1"\niface = "eth2"\nbackends = ["pcap"]\n')
    for path in (campaign, topology):
        path.chmod(0o644)
    refused(run_refused(user, shared, nothing_left, "--campaign", str(campaign)), "apps mydump holds a NUL byte")
    refused(run_refused(user, shared, nothing_left, "--topology", str(topology)),
            "line 3 [hosts.s1]: capbench: its command holds a NUL byte")


# Fools the programs' first question, access(2) of the name (as a name swapped to a link to a root-only
# file right after that question would), and leaves the second, of /proc/self/fd/N, to the C library.
# An ambient grant does not make exec() secure (the permitted set does not grow beyond the ambient
# one: security/commoncap.c), so the loader takes LD_PRELOAD.
FOOLED_NAME_CHECK = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

int faccessat(int dirfd, const char *path, int mode, int flags)
{
	int (*real)(int, const char *, int, int) = dlsym(RTLD_NEXT, "faccessat");

	if (strncmp(path, "/proc/self/fd/", 14))
		return 0;
	return real(dirfd, path, mode, flags);
}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="a C compiler builds the LD_PRELOAD library")
def test_the_programs_judge_the_file_they_opened(user, shared, roots):
    shim = shared / "fooled.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), "-x", "c", "-", "-ldl"], input=FOOLED_NAME_CHECK,
                   text=True, check=True, capture_output=True)
    shim.chmod(0o755)
    caps = ",".join(f"+{c}" for c in ("net_raw", *READ_INTERPRETER))
    for args in (["--size", f"dist:{roots}"], ["--replay", str(roots)]):
        argv = ["setpriv", f"--reuid={user[0]}", f"--regid={user[1]}", "--clear-groups", f"--inh-caps=-all,{caps}",
                f"--ambient-caps={caps}", "env", f"LD_PRELOAD={shim}", str(find_program("capbench-gen")), "--check",
                "--mtu", "1500", "--rate", "1kpps", "--dst-mac", "02:cb:00:00:00:02", *args]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
        assert f"permission denied to uid {user[0]}" in p.stderr and SECRET not in p.stdout + p.stderr, p.stderr
