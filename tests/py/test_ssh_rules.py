"""The ssh settings capbench refuses without --insecure-ssh (capbench.remote.ssh_rules): in a
topology's ssh_options, in the lines of the ssh_config file it names, and in what `ssh -G` says ssh
would use (the real OpenSSH client, no login: `ssh -G` only evaluates the configuration)."""

from __future__ import annotations

import shutil

import pytest
from capbench.errors import UsageError
from capbench.remote import ssh_rules, topology
from capbench.remote.ssh import Host

REFUSED = ["ProxyCommand=nc %h %p", "proxycommand=sh -c 'id'", "LocalCommand=id", "PermitLocalCommand=yes",
           "KnownHostsCommand=/bin/echo %H", "PKCS11Provider=/tmp/x.so", "SecurityKeyProvider=/tmp/y.so",
           "StrictHostKeyChecking=no", "StrictHostKeyChecking=off", "StrictHostKeyChecking=accept-new",
           "StrictHostKeyChecking=false", "stricthostkeychecking=\"no\"", "Match=exec true", "Include=/etc/x"]
ALLOWED = ["Port=2222", "ProxyCommand=none", "PermitLocalCommand=no", "StrictHostKeyChecking=yes",
           "StrictHostKeyChecking=ask", "UserKnownHostsFile=/dev/null", "GlobalKnownHostsFile=/dev/null",
           "ProxyJump=jump@bastion:22", "SecurityKeyProvider=internal", "VerifyHostKeyDNS=yes", "Match=host x"]


@pytest.mark.parametrize("option", REFUSED)
def test_refused_options(option):
    assert ssh_rules.refusal(*ssh_rules.split_option(option))


@pytest.mark.parametrize("option", ALLOWED)
def test_allowed_options(option):
    assert ssh_rules.refusal(*ssh_rules.split_option(option)) is None


def test_config_file_lines():
    text = ("# a comment: ProxyCommand nc\nHost lab*\n  Port 2222\n  StrictHostKeyChecking = accept-new\n"
            "Match host s1 !exec \"test -f /x\"\n  ProxyCommand none\n\tLocalCommand\tid\n")
    assert [(n, why.split()[0]) for n, _, why in ssh_rules.refused_lines(text)] == [(4, "lets"), (5, "runs"),
                                                                                   (7, "runs")]


def test_jump_hosts():
    assert ssh_rules.jump_hosts("a@b:22,ssh://c@[fe80::1]:2,d") == ["b", "fe80::1", "d"]
    assert ssh_rules.jump_hosts("none") == []


FILE = """\
[hosts.s1]
ssh = "root@s1.lab"
{extra}
[generator]
host = "local"
iface = "g0"
[[sensor]]
host = "s1"
iface = "eth1"
backend = "pcap"
"""


def test_topology_refuses_an_option_naming_the_line_and_the_flag():
    text = FILE.format(extra='ssh_options = ["Port=22", "ProxyCommand=nc %h %p"]')
    with pytest.raises(UsageError) as e:
        topology.parse(text, "lab.toml")
    msg = str(e.value)
    assert "lab.toml' line 3 [hosts.s1]: ssh_options" in msg and "ProxyCommand" in msg and "--insecure-ssh" in msg
    assert "\n" not in msg
    assert topology.parse(text, "lab.toml", insecure_ssh=True).hosts["s1"].ssh_options[1] == "ProxyCommand=nc %h %p"


def test_topology_refuses_its_ssh_config_files_lines(tmp_path):
    config = tmp_path / "lab_ssh"
    config.write_text("Host *\n  User root\n  KnownHostsCommand /bin/cat /tmp/keys\n")
    path = tmp_path / "lab.toml"
    path.write_text(FILE.format(extra=f'ssh_config = "{config}"'))
    with pytest.raises(UsageError, match=r"line 3 \[hosts.s1\]: ssh_config: .*lab_ssh' line 3: `KnownHostsCommand "
                                         r"/bin/cat /tmp/keys` runs a command .*--insecure-ssh"):
        topology.read(path)
    assert topology.read(path, insecure_ssh=True).hosts["s1"].ssh_config == str(config)
    config.write_text("Host *\n  User root\n")
    assert topology.read(path).hosts["s1"].ssh_config == str(config)
    config.unlink()
    with pytest.raises(UsageError, match="no file"):
        topology.read(path)


needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client (apt-get install openssh-client)")


@needs_ssh
def test_what_ssh_would_use_is_checked_before_a_login(tmp_path):
    """`ssh -G` with the host's ssh_config: a refused setting from it is one line, before any login
    (the destination does not exist: a login would fail otherwise)."""
    config = tmp_path / "cfg"
    config.write_text("Host *\n  StrictHostKeyChecking no\n")
    h = Host("s1", "root@nosuch.invalid", ssh_config=config)
    with pytest.raises(UsageError, match=r"host 's1' .*`stricthostkeychecking false` \(lets ssh log in to a host "
                                         r"whose key it has not checked.*--insecure-ssh"):
        h.open()
    assert h._master is None and h._dir is None
    config.write_text("Host nosuch.invalid\n  ProxyJump hop1\nHost hop1\n  ProxyCommand sh -c 'id'\n")
    with pytest.raises(UsageError, match="through jump host hop1 .*proxycommand"):
        Host("s1", "root@nosuch.invalid", ssh_config=config).check_settings()
    Host("s1", "root@nosuch.invalid", ssh_config=config, insecure_ssh=True).check_settings()  # allowed
    config.write_text("Host *\n  Port 2222\n")
    Host("s1", "root@nosuch.invalid", ssh_config=config, ssh_options=["ProxyJump=hop2"]).check_settings()
