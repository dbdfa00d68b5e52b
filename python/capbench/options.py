"""Reading an option's value out of an argument list that capbench passes on to a program, and
taking an option out of it; a whole number in a range, as options that take a count read it."""

from __future__ import annotations

import re


def whole_number(text: object, lo: int, hi: int) -> int | None:
    """`text` as a whole number from `lo` to `hi` (ASCII digits, blanks around them), else None:
    the caller says what the option takes. No sign, no `1_000`, no digits of other scripts, and no
    number longer than `hi` is (int() would take all of those)."""
    digits = str(text).strip()
    if not re.fullmatch(r"[0-9]+", digits) or len(digits.lstrip("0")) > len(str(hi)):
        return None
    value = int(digits)
    return value if lo <= value <= hi else None


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
