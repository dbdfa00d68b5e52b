"""Where capbench's cgroups are and what they are called (testbed.cgroups), from the texts of
/proc/self/mountinfo and /proc/self/cgroup: no cgroup is made here."""

import os
from pathlib import Path

from capbench.testbed import cgroups

# A hybrid host (this machine): v1 controllers under /sys/fs/cgroup, the v2 hierarchy at .../unified.
HYBRID = """\
31 26 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
"""
# A container without its own cgroup namespace: the hierarchy's part from /docker/abc is mounted, at
# a path with a space (written \\040 in mountinfo).
CONTAINER = "520 500 0:30 /docker/abc /sys/fs/my\\040cgroup rw,nosuid shared:1 - cgroup2 cgroup2 rw,nsdelegate\n"


def test_the_cgroup2_mounts_of_mountinfo():
    assert cgroups.cgroup2_mounts(HYBRID) == [("/", "/sys/fs/cgroup/unified")]
    assert cgroups.cgroup2_mounts(CONTAINER) == [("/docker/abc", "/sys/fs/my cgroup")]
    assert cgroups.cgroup2_mounts("42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n") == []
    assert cgroups.hierarchy_root(HYBRID) == Path("/sys/fs/cgroup/unified")
    assert cgroups.hierarchy_root(HYBRID + CONTAINER) == Path("/sys/fs/cgroup/unified")  # the widest part
    assert cgroups.hierarchy_root("") is None


def test_own_path_is_the_v2_line():
    assert cgroups.own_path("4:memory:/x\n0::/user.slice/session-3.scope\n") == "/user.slice/session-3.scope"
    assert cgroups.own_path("0::/\n") == "/"
    assert cgroups.own_path("4:memory:/x\n") is None  # v1 only
    assert cgroups.own_path("0::/../../outside\n") is None  # outside this cgroup namespace


def test_directory_of_a_cgroup_under_its_mount():
    hybrid, container = cgroups.cgroup2_mounts(HYBRID), cgroups.cgroup2_mounts(CONTAINER)
    assert cgroups.directory_of("/", hybrid) == Path("/sys/fs/cgroup/unified")
    assert cgroups.directory_of("/a/b", hybrid) == Path("/sys/fs/cgroup/unified/a/b")
    assert cgroups.directory_of("/docker/abc/x", container) == Path("/sys/fs/my cgroup/x")
    assert cgroups.directory_of("/docker/abcd", container) is None  # not under the mounted part
    assert cgroups.directory_of("/elsewhere", container) is None


def test_run_group_names_carry_their_owner():
    name = cgroups.run_group_name(1234, 56789, 4026531836)
    assert name == "capbench-1234-56789-4026531836"
    assert cgroups.owner_of(name) == (1234, 56789, 4026531836)
    assert cgroups.run_group_name(1, 2) == f"capbench-1-2-{os.stat('/proc/self/ns/pid').st_ino}"
    for other in ("capbench-1234-5", "capbench-12a-5-6", "1-capbench-1234-5-6", "capbench-1234-5-6-x", "x"):
        assert cgroups.owner_of(other) is None, other


def test_program_groups_are_plain_directory_names():
    assert cgroups.program_name(3, "capbench-cap #2") == "3-capbench-cap-2"
    assert cgroups.program_name(4, "tcpdump's post command /usr/bin/racount") == "4-tcpdump-s-post-command-usr-bin-racount"
    assert cgroups.program_name(5, "../..") == "5-..-.."  # a single name: no "/" can reach another folder
    assert cgroups.program_name(6, "///") == "6-program"
    assert len(cgroups.program_name(7, "x" * 300)) == len("7-") + 40
    # A program's group never looks like a run group (which `hygiene` would take for a killed capbench's).
    assert cgroups.owner_of(cgroups.program_name(8, "capbench-1-2-3")) is None
