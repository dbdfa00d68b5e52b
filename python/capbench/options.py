"""Reading an option's value out of an argument list that capbench passes on to a program, and
taking an option out of it."""

from __future__ import annotations


def option_value(argv: list[str], *names: str) -> str | None:
    """The value of the last `--name VALUE` or `--name=VALUE` in argv (None if not given);
    a short name (`-b`) only in the first form."""
    value = None
    for i, a in enumerate(argv):
        for name in names:
            if a == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif a.startswith(name + "=") and name.startswith("--"):
                value = a.split("=", 1)[1]
    return value


def without(argv: list[str], *names: str) -> list[str]:
    """argv without each `--name VALUE` and `--name=VALUE` of `names` (a name last, without its
    value, goes too)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a in names:
            skip = True
        elif not any(a.startswith(n + "=") for n in names):
            out.append(a)
    return out
