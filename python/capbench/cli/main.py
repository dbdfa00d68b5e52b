"""`capbench ARGS`: the command ARGS name, run; its errors turned into one line and an exit status.

Every error the user can fix ends the command with one line on stderr,
`capbench: <problem>: <fix>`, and exit status 2 (1 for failures at run time;
`capbench run` ends with 3 when it measured nothing valid, see RUN_HELP);
only `main` chooses exit statuses.
"""

from __future__ import annotations

import errno
import os
import sys

from capbench.cli.info import cmd_backends, cmd_compare, cmd_report
from capbench.cli.parser import build_parser
from capbench.cli.passthrough import PASSTHROUGH, cmd_passthrough
from capbench.cli.run import cmd_run
from capbench.cli.side import cmd_side
from capbench.cli.testbed import cmd_testbed
from capbench.cli.tune import cmd_tune
from capbench.errors import CapbenchError, Terminated, UsageError
from capbench.testbed import veth_pair as testbed


def _main(argv: list[str]) -> int:
    if argv and argv[0] in PASSTHROUGH:
        return cmd_passthrough(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    handler = {"run": cmd_run, "testbed": cmd_testbed, "backends": cmd_backends, "report": cmd_report,
               "compare": cmd_compare, "side": cmd_side,
               "tune": cmd_tune}
    return handler[args.command](args)


WORD_MAX = 200  # characters of one word (a path, a value) an error line shows


def error_line(e: BaseException) -> str:
    """The one line an error is shown as: its words on one line, each longer than WORD_MAX cut in
    the middle (a 5,000-character path or value stays a readable line), a control character
    echoed from the input (an argument or file holding ESC) written as its escape (\\x1b)."""
    line = " ".join(w if len(w) <= WORD_MAX else f"{w[:120]}...{w[-60:]} ({len(w):,} characters)"
                    for w in str(e).split())
    return "".join(c.encode("unicode_escape").decode("ascii") if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f else c
                   for c in line)


def exec_too_big(e: BaseException | None) -> bool:
    """Whether `e` is execve()'s E2BIG, or was raised while handling one (a child that could not start,
    wrapped as "cannot start ...": `raise ... from None` still keeps it as the context). The kernel
    refuses an argument above MAX_ARG_STRLEN or arguments and environment above its share of the
    stack (fs/exec.c); capbench bounds the words it reads (inputs.check_words), so what is left is
    a value given to it directly, or a huge environment: the user's to shorten."""
    seen = 0
    while e is not None and seen < 10:
        if isinstance(e, OSError) and e.errno == errno.E2BIG:
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


TOO_BIG_FIX = ("a command's arguments and environment are more than the kernel takes (E2BIG): shorten the "
               "values given (or the environment)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        # SIGTERM raises Terminated from here on, before anything is made, so whatever a
        # command makes is undone by its `finally` blocks at any moment.
        with testbed.sigterm_raises():
            return _main(argv)
    except CapbenchError as e:
        if exec_too_big(e):
            print(f"capbench: {error_line(e)}: {TOO_BIG_FIX}", file=sys.stderr)
            return UsageError.exit_status
        print(f"capbench: {error_line(e)}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("capbench: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("capbench: terminated", file=sys.stderr)
        return 143
    except BrokenPipeError:
        # `capbench ... | head`: the reader went away; nothing left to say.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 1
    except OSError as e:
        if not exec_too_big(e):
            raise
        print(f"capbench: cannot start a program: {TOO_BIG_FIX}", file=sys.stderr)
        return UsageError.exit_status
