"""Reading an option's value out of an argument list that capbench passes on to a program."""

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
