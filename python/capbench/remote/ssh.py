"""One host capbench drives: this machine (`local`), or an SSH destination reached with the
system's OpenSSH client.

capbench calls `ssh` itself, so the user's ~/.ssh/config, agent, keys and ProxyJump work as they
do in a terminal. Each remote Host holds one master connection (ControlMaster, its socket in a
private 0700 directory): every later command and program rides on it, so a trial does not pay
for a login. The master is a child of capbench (under `setpriv --pdeathsig KILL`), so it goes
when capbench goes, however capbench ends. `BatchMode=yes` means ssh never asks for a password
or a host key: it fails, and the failure becomes one UsageError naming the fix. Before the first
login, `ssh -G` says what ssh would use for the host: a setting that runs a command or skips the
host-key check (ssh_rules) is refused unless the Host is made with insecure_ssh (--insecure-ssh).
A host whose master connection ends is lost (`Host.lost()`, within ALIVE_INTERVAL_S × ALIVE_COUNT
of its last answer), and every session on it fails naming it.

A remote program (`Host.start`) runs under a small sh wrapper on the host (REMOTE_WRAPPER): the
program gets a session (and process group) of its own with `setsid`, and the wrapper prints its
pid on stderr, so `signal()` reaches the whole group with a `kill` over the master. Its stdin
is a pipe on which capbench writes one byte per HEARTBEAT_S; a watchdog in the wrapper kills
the program's group (SIGTERM, then SIGKILL after KILL_GRACE_S) when the pipe reaches its end
(the local ssh client was killed, capbench died, the master closed) or stays silent for the
host's `alive_timeout_s` (the connection dropped and the host's sshd has not noticed). No
pseudo-terminal (`ssh -tt`) is needed for any of it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal as signals
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from capbench.errors import RunError, UsageError
from capbench.remote import ssh_rules
from capbench.testbed.procs import Child, ChildError

SSH = "ssh"
LOCAL = "local"  # the host name that means this machine
MASTER_DIR_PREFIX = "capbench-ssh-"  # + capbench's pid + "-" + a random part: a master connection's folder
HEARTBEAT_S = 1.0  # capbench writes one byte to each remote program's stdin this often
# A host that stops answering is lost within ALIVE_INTERVAL_S × ALIVE_COUNT (3 s): ssh asks it
# (ServerAliveInterval) each second it has heard nothing, and the master gives up (exit status 255)
# after ALIVE_COUNT unanswered asks. A host whose sshd or TCP connection goes away (a FIN or RST) is
# lost at once: the master reads the end of its connection. Either way every session riding on the
# master ends with it, and Host.lost() says so.
ALIVE_INTERVAL_S = 1
ALIVE_COUNT = 3
# The wrapper's watchdog on the host kills a program whose heartbeat has been silent this long:
# the other end's view of a lost connection, with room for a stalled capbench (the heartbeat is a thread).
WATCHDOG_S = 2 * ALIVE_INTERVAL_S * ALIVE_COUNT
MASTER_ERR_TAIL = 4096  # the bytes of the master's stderr read for why it ended
LOST_WAIT_S = 1.0  # how long a session that ended with exit status 255 waits for the master to say lost
KILL_GRACE_S = 2  # the watchdog's SIGTERM → SIGKILL wait (whole seconds: sleep(1) takes no fraction everywhere)
PID_MARK = "capbench-remote-pid"  # the wrapper's first stderr line: "capbench-remote-pid PID"
REMOTE_PACKAGES = {"setsid": "util-linux", "timeout": "coreutils", "head": "coreutils", "sh": "dash"}

# sh -c REMOTE_WRAPPER capbench-remote ALIVE_TIMEOUT_S GRACE_S PROGRAM ARGS...
# fd 3 keeps the session's stdin (the heartbeat): an asynchronous list's stdin is /dev/null in
# sh, and the program must not read the heartbeat. `setsid` execs in place (the background
# job is not a group leader), so $! is the program's pid, session and process group. The
# watchdog's stdout and stderr go to /dev/null so that sshd does not keep the session open for
# it after the program ends; `wait` gives the program's status (128 + N: killed by signal N), its
# stderr to /dev/null so that sh's own "Terminated" does not reach the program's stderr lines.
REMOTE_WRAPPER = r"""
t=$1; g=$2; shift 2
exec 3<&0 </dev/null
setsid "$@" &
pid=$!
echo "capbench-remote-pid $pid" >&2
(
  while [ -n "$(timeout "$t" head -c 1 <&3)" ]; do :; done
  kill -TERM -"$pid" 2>/dev/null || exit 0
  sleep "$g"
  kill -KILL -"$pid" 2>/dev/null
) >/dev/null 2>&1 &
dog=$!
exec 3<&-
wait "$pid" 2>/dev/null; rc=$?
kill "$dog" 2>/dev/null
exit "$rc"
"""

# What ssh prints (its last stderr lines, exit status 255) → what is wrong and the fix.
_SSH_FAULTS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"Could not resolve hostname|Name or service not known|Temporary failure in name resolution"),
     "ssh cannot resolve the host name: check its `ssh` in the topology, or add a Host entry to ~/.ssh/config"),
    (re.compile(r"Connection refused"),
     "the connection was refused: start sshd on that host, or give the port it listens on (`-p` in "
     "ssh_options, or Port in ~/.ssh/config)"),
    (re.compile(r"timed out|No route to host|Network is unreachable|Connection closed by remote host|"
                r"kex_exchange_identification"),
     "the host did not answer: check that it is up and that its address and port are right"),
    (re.compile(r"Host key verification failed|REMOTE HOST IDENTIFICATION HAS CHANGED|No \S+ host key is known"),
     "its host key is unknown or has changed: log in once with `ssh DEST` to check and record the key "
     "(capbench never accepts a key by itself)"),
    (re.compile(r"Permission denied|Too many authentication failures"),
     "the login was refused: capbench logs in without a password, so install your key there "
     "(`ssh-copy-id DEST`) or load it into your agent (`ssh-add`)"),
]


def ssh_fault(host: str, destination: str, stderr: str, rc: int) -> UsageError:
    """One line for an ssh that failed (exit status 255): which host, what, and the fix."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("Warning:")]
    for pattern, fix in _SSH_FAULTS:
        if any(pattern.search(line) for line in lines):
            return UsageError(f"host {host!r} ({destination}): {fix.replace('DEST', destination)}")
    said = lines[-1] if lines else f"exit status {rc}, no message"
    return UsageError(f"host {host!r} ({destination}): ssh failed: {said[:200]}: check that `ssh {destination} true` "
                      f"works without a password")


def check_destination(destination: str, what: str) -> str:
    """An SSH destination (`[user@]host`, `ssh://[user@]host[:port]`) that ssh cannot take for an option."""
    if not destination or destination.startswith("-") or any(c.isspace() or ord(c) < 32 for c in destination):
        raise UsageError(f"{what} {destination!r} is not an SSH destination: give [user@]host, e.g. root@sensor1")
    return destination


def check_ssh_option(option: str, what: str) -> str:
    """One `-o` value, `Key=Value` (a bare flag or a second argument could change what ssh runs)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*=[^\n\r\0]+", option):
        raise UsageError(f"{what} {option!r}: give ssh options as Key=Value (as after `ssh -o`), "
                         f"e.g. \"Port=2222\"")
    return option


def _ssh_program() -> list[str]:
    if shutil.which(SSH) is None:
        raise UsageError("ssh not found: install the OpenSSH client (apt-get install openssh-client)")
    return [SSH]


class Host:
    """One host. `destination` None: this machine, no SSH (`run` and `start` run locally).

    `build_dir`: where capbench's programs are on that host (else they are looked up on its PATH).
    `ssh_options`: `Key=Value` strings given to ssh as `-o`; `ssh_config`: a config file (`ssh -F`)
    in place of ~/.ssh/config. Use it as a context manager, or call `open()` and `close()`.
    """

    def __init__(self, name: str, destination: str | None = None, *, build_dir: str | None = None,
                 ssh_options: Sequence[str] = (), ssh_config: str | os.PathLike[str] | None = None,
                 connect_timeout_s: int = 10, alive_interval_s: int = ALIVE_INTERVAL_S,
                 alive_count: int = ALIVE_COUNT, alive_timeout_s: int = WATCHDOG_S,
                 capbench: Sequence[str] = ("capbench",), insecure_ssh: bool = False):
        self.name = name
        # How capbench itself runs there (its `capbench side` agent runs a remote capture side).
        self.capbench = tuple(capbench)
        self.destination = None if destination is None else check_destination(destination, f"host {name!r}: ssh")
        self.build_dir = build_dir
        self.ssh_options = tuple(check_ssh_option(o, f"host {name!r}: ssh option") for o in ssh_options)
        self.ssh_config = None if ssh_config is None else str(ssh_config)
        self.connect_timeout_s = connect_timeout_s
        self.alive_interval_s = alive_interval_s
        self.alive_count = alive_count
        # A remote program whose heartbeat is silent this long is killed (a dropped connection).
        self.alive_timeout_s = alive_timeout_s
        # --insecure-ssh: the settings ssh_rules refuses are the user's to take (nothing checked).
        self.insecure_ssh = insecure_ssh
        self._dir: str | None = None
        self._master: subprocess.Popen | None = None
        self._master_err: Any = None  # the master's stderr (a file): why it ended, for lost()

    @property
    def local(self) -> bool:
        return self.destination is None

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.destination!r})"

    @property
    def where(self) -> str:
        return "this machine" if self.local else f"{self.name!r} ({self.destination})"

    # --- the master connection

    @property
    def control_path(self) -> str:
        if self._dir is None:
            raise RunError(f"host {self.name!r}: not connected (call open() first)")
        return os.path.join(self._dir, "master")

    def ssh_argv(self, *extra: str) -> list[str]:
        """`ssh` with capbench's options, the user's options and `extra`, up to the destination."""
        argv = _ssh_program()
        if self.ssh_config:
            argv += ["-F", self.ssh_config]
        for opt in ("BatchMode=yes", f"ConnectTimeout={self.connect_timeout_s}",
                    f"ServerAliveInterval={self.alive_interval_s}", f"ServerAliveCountMax={self.alive_count}",
                    f"ControlPath={self.control_path}", *self.ssh_options):
            argv += ["-o", opt]
        return [*argv, "-T", *extra]

    def settings_argv(self, destination: str) -> list[str]:
        """`ssh -G`: the settings ssh would use for `destination` (no login), with the host's
        ssh_config and ssh_options as every connection gets them."""
        argv = [*_ssh_program(), "-G"] + (["-F", self.ssh_config] if self.ssh_config else [])
        for opt in self.ssh_options:
            argv += ["-o", opt]
        return [*argv, "--", destination]

    def settings(self, destination: str) -> list[tuple[str, str]]:
        """What `ssh -G` says of `destination`: (keyword, value) pairs."""
        try:
            p = subprocess.run(self.settings_argv(destination), capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=30)
        except subprocess.TimeoutExpired:
            raise UsageError(f"host {self.where}: `ssh -G` did not answer within 30 s: check its ssh_config "
                             f"(a Match exec that hangs?)") from None
        if p.returncode != 0:
            said = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1][:200]
            raise UsageError(f"host {self.where}: ssh cannot read its settings ({said}): fix the host's ssh_options "
                             f"or ssh_config")
        return ssh_rules.parse_effective(p.stdout)

    def check_settings(self) -> None:
        """Refuse (UsageError) a setting of ssh_rules that ssh would use for this host or a ProxyJump
        host on the way, wherever it comes from (the topology, ~/.ssh/config, /etc/ssh/ssh_config)."""
        if self.insecure_ssh:
            return
        todo, seen = [self.destination], set()
        while todo:
            destination = todo.pop(0)
            seen.add(destination)
            effective = self.settings(destination)
            refused = ssh_rules.refused_settings(effective)
            if refused:
                setting, why = refused[0]
                hop = "" if destination == self.destination else f" on its way through jump host {destination}"
                raise UsageError(f"host {self.where}: ssh would use `{setting}`{hop} ({why}; from its ssh_options, "
                                 f"its ssh_config, ~/.ssh/config or /etc/ssh/ssh_config): {ssh_rules.fix(setting)}")
            for k, v in effective:
                if k == "proxyjump":
                    todo += [h for h in ssh_rules.jump_hosts(v) if h not in seen]

    def open(self) -> Host:
        """Log in once (the master connection); a UsageError in one line if ssh cannot, or if it
        would use a setting ssh_rules refuses (check_settings)."""
        if self.local or self._master is not None:
            return self
        self.check_settings()
        # Mode 0700: only we reach the socket. Its name carries capbench's pid: `testbed down`
        # removes the folders of a capbench that was killed (testbed.hygiene.folders_of).
        self._dir = tempfile.mkdtemp(prefix=f"{MASTER_DIR_PREFIX}{os.getpid()}-")
        os.chmod(self._dir, 0o700)
        prefix = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []
        argv = prefix + self.ssh_argv("-N", "-o", "ControlMaster=yes", "-o", "ControlPersist=no",
                                      "--", self.destination)
        err = self._master_err = tempfile.TemporaryFile(mode="w+", dir=self._dir)
        self._master = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                        text=True, process_group=0)
        deadline = time.monotonic() + self.connect_timeout_s + 5
        try:
            while True:
                if self._master.poll() is not None:
                    err.seek(0)
                    raise ssh_fault(self.name, self.destination, err.read(), self._master.returncode)
                if os.path.exists(self.control_path) and self._check():
                    break
                if time.monotonic() > deadline:
                    raise UsageError(f"host {self.where}: no login within {self.connect_timeout_s + 5} s: check "
                                     f"that `ssh {self.destination} true` works without a password")
                time.sleep(0.02)
        except BaseException:
            self.close()
            raise
        return self

    def _check(self) -> bool:
        p = subprocess.run(self.ssh_argv("-O", "check", "--", self.destination), capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=10)
        return p.returncode == 0

    def lost(self, wait_s: float = 0.0) -> str | None:
        """Why the host is lost, if it is: its master connection has ended while the Host was open
        (ServerAlive gave up, or the connection was closed: ALIVE_INTERVAL_S). None: not lost (or
        this machine). No round trip: whether the master process has ended, waiting up to `wait_s`
        for it (a session that ended with exit status 255 may have seen the end of the connection
        a moment before the master did)."""
        if self.local or self._master is None:
            return None
        try:
            self._master.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None
        said = ""
        if self._master_err is not None:
            # pread: no shared file offset (sessions ask from several threads), and only the end.
            fd = self._master_err.fileno()
            tail = os.pread(fd, MASTER_ERR_TAIL, max(0, os.fstat(fd).st_size - MASTER_ERR_TAIL))
            lines = [x.strip() for x in tail.decode(errors="replace").splitlines() if x.strip()]
            said = f" ({lines[-1][:200]})" if lines else ""
        return (f"lost the connection to {self.name} ({self.destination}){said}: check that host and the "
                f"network to it, then run again")

    def check_not_lost(self) -> None:
        """RunError naming the host when it is lost (lost())."""
        why = self.lost()
        if why:
            raise RunError(why)

    def connected(self) -> bool:
        """Whether the master connection is up (always True for this machine)."""
        return self.local or (self._master is not None and self._master.poll() is None and self._check())

    def close(self) -> None:
        """Stop the master (`ssh -O exit`, then SIGTERM/SIGKILL) and remove its directory."""
        master, self._master = self._master, None
        if master is not None:
            if master.poll() is None:
                try:
                    subprocess.run(self.ssh_argv("-O", "exit", "--", self.destination), capture_output=True,
                                   stdin=subprocess.DEVNULL, timeout=5)
                except (subprocess.TimeoutExpired, UsageError):
                    pass
            try:
                master.wait(timeout=5)
            except subprocess.TimeoutExpired:
                master.terminate()
                try:
                    master.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    master.kill()
                    master.wait()
        if self._master_err is not None:
            self._master_err.close()
            self._master_err = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Host:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    # --- commands

    def program(self, name: str) -> str:
        """The path (or the bare name, for PATH) of one of capbench's programs on this host."""
        return f"{self.build_dir.rstrip('/')}/{name}" if self.build_dir and name.startswith("capbench-") else name

    def remote_argv(self, command: str) -> list[str]:
        """The local argv that runs the shell `command` on the host over the master."""
        return self.ssh_argv("-o", "ControlMaster=no", "--", self.destination, command)

    def run(self, argv: Sequence[str], timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run `argv` on the host to its end; its CompletedProcess (text). A remote command is
        bounded on the host too (`timeout`), so none outlives `timeout_s`. ssh failures (exit
        status 255 with no remote command run) are one UsageError; RunError on timeout."""
        if self.local:
            try:
                return subprocess.run(list(argv), capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                      timeout=timeout_s)
            except FileNotFoundError:
                raise UsageError(f"{argv[0]} not found on this machine") from None
            except subprocess.TimeoutExpired:
                raise RunError(f"`{shlex.join(argv)}` did not finish within {timeout_s:g} s") from None
        bounded = ["timeout", "--kill-after=1", f"{max(1, int(timeout_s))}", *argv]
        try:
            p = subprocess.run(self.remote_argv(shlex.join(bounded)), capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=timeout_s + 5)
        except subprocess.TimeoutExpired:
            raise RunError(f"host {self.where}: `{shlex.join(argv)}` did not finish within {timeout_s:g} s") from None
        if p.returncode == 255:
            lost = self.lost(wait_s=LOST_WAIT_S)
            if lost:
                raise RunError(lost)
            if not self.connected():
                raise ssh_fault(self.name, self.destination, p.stderr, p.returncode)
        return p

    def ip_json(self, ns: str | None, *args: str) -> Any:
        """`ip -j ARGS` on the host (in namespace `ns`), parsed (testbed.nic's IpJson); RunError
        with ip's own line when it fails."""
        p = self.run(["ip", *(["-n", ns] if ns else []), "-j", *args], timeout_s=15)
        if p.returncode != 0:
            said = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1][:200]
            raise RunError(f"host {self.where}: `ip -j {' '.join(args)}` failed: {said}")
        try:
            return json.loads(p.stdout or "[]")
        except ValueError:
            raise RunError(f"host {self.where}: `ip -j {' '.join(args)}` printed no JSON") from None

    def ssh_connection(self) -> str | None:
        """SSH_CONNECTION ("client port server port") as the host sees capbench's connection to it
        (sshd sets it in every session, a multiplexed one too); None for this machine."""
        if self.local:
            return None
        p = self.run(["sh", "-c", 'printf "%s" "$SSH_CONNECTION"'], timeout_s=15)
        return p.stdout.strip() or None

    def start(self, name: str, argv: Sequence[str]) -> Child:
        """Start `argv` on the host; a Child whose JSON Lines, stderr, waits and stop work as
        for a local one (testbed.procs.Child). A remote one dies with its connection."""
        if self.local:
            return Child(name, argv)
        return RemoteChild(self, name, argv)

    def popen(self, command: str) -> subprocess.Popen:
        """The shell `command` on the host with stdin and stdout as pipes (text, line-buffered):
        a conversation such as the clock's samples. The caller closes and waits."""
        argv = ["sh", "-c", command] if self.local else self.remote_argv(command)
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, bufsize=1)

    def kill_group(self, pgid: int, signum: int) -> bool:
        """Send `signum` to process group `pgid` on the host; whether it got there."""
        if self.local:
            try:
                os.killpg(pgid, signum)
                return True
            except ProcessLookupError:
                return False
        try:
            p = self.run(["kill", f"-{int(signum)}", "--", f"-{int(pgid)}"], timeout_s=5)
        except (RunError, UsageError):
            return False
        return p.returncode == 0


class RemoteChild(Child):
    """A program on a remote host, run under REMOTE_WRAPPER by a local `ssh` over the master.

    Output, waiting and errors are Child's. `signal()` goes to the remote process group with a
    `kill` over the master (the local ssh client is killed as well for SIGKILL, when the remote
    side cannot be reached); the heartbeat thread writes to ssh's stdin, so the remote program
    dies when this object's ssh client does."""

    STDIN = subprocess.PIPE

    def __init__(self, host: Host, name: str, argv: Sequence[str]):
        self.host = host
        self.remote_pid: int | None = None
        self._pid_seen = threading.Event()
        argv = [host.program(argv[0]), *argv[1:]] if argv else []
        if not argv:
            raise ChildError(f"cannot start {name}: no program")
        command = shlex.join(["sh", "-c", REMOTE_WRAPPER, "capbench-remote", str(int(host.alive_timeout_s)),
                              str(KILL_GRACE_S), *argv])
        super().__init__(f"{name} on {host.name}", host.remote_argv(command))
        self._beat = threading.Thread(target=self._heartbeat, name=f"{name}-heartbeat", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while self.proc.poll() is None:
                stdin.write(".")
                stdin.flush()
                time.sleep(HEARTBEAT_S)
        except (BrokenPipeError, ValueError, OSError):
            pass
        try:
            stdin.close()  # the end: the master passes it on, and the watchdog kills the program
        except OSError:
            pass

    def _read_stderr(self) -> None:
        try:
            super()._read_stderr()  # bounded like every child's (procs.read_lines)
        finally:
            self._pid_seen.set()

    def _stderr_line(self, line: str) -> None:
        if self.remote_pid is None and line.startswith(PID_MARK + " "):
            try:
                self.remote_pid = int(line.split()[1])
            except (IndexError, ValueError):
                pass
            self._pid_seen.set()
            return
        super()._stderr_line(line)

    def failure(self, what: str) -> ChildError:
        e = super().failure(what)
        rc = self.proc.poll()
        if rc == 255:
            lost = self.host.lost(wait_s=LOST_WAIT_S)  # the session ended with the master: say so
            if lost:
                return ChildError(f"{self.name} {what}: {lost}")
        if rc == 255 and self.remote_pid is None:  # ssh itself failed: say so in its terms
            err = ssh_fault(self.host.name, self.host.destination or "", "\n".join(self.stderr_lines), rc)
            return ChildError(f"{self.name} {what}: {err}")
        if rc is not None and rc > 128 and self.remote_pid is not None:
            e = ChildError(str(e).replace(f"exit status {rc}", f"killed by signal {rc - 128} on {self.host.name}"))
        return e

    def signal(self, signum: int) -> None:
        if self.proc.poll() is not None:
            return
        self._pid_seen.wait(timeout=self.host.connect_timeout_s)
        reached = self.remote_pid is not None and self.host.kill_group(self.remote_pid, signum)
        if signum == signals.SIGKILL or not reached:
            if signum == signals.SIGKILL and reached:
                try:
                    self.proc.wait(timeout=2)  # let the wrapper's status come back over ssh
                    return
                except subprocess.TimeoutExpired:
                    pass
            if not reached and signum != signals.SIGKILL:
                return  # stop() falls back to SIGKILL after its timeout
            try:
                os.killpg(self.proc.pid, signals.SIGKILL)  # the local client: the watchdog does the rest
            except ProcessLookupError:
                pass
