"""capbench: an open, reproducible packet-capture benchmark for Linux.

The Python package drives the C programs (capbench-gen, capbench-cap,
capbench-xdpcount), builds the veth test bed, runs the methods and writes
and prints the results.
"""

import re


def _release() -> str:
    """capbench's release, written once: in meson.build's project() (the C programs' --version and
    --describe, and the wheel's metadata through meson-python's dynamic version, take it from
    there). An installed package has it in capbench/_version.py, which the build writes from that
    line (python/meson.build); a source tree (the Makefile's venv) reads meson.build itself."""
    try:
        from capbench._version import VERSION
        return VERSION
    except ImportError:
        pass
    from capbench.binaries import source_tree
    tree = source_tree()
    found = tree and re.search(r"project\(\s*'capbench'.*?\bversion\s*:\s*'([^']+)'",
                               (tree / "meson.build").read_text(encoding="utf-8"), re.S)
    if not found:
        raise ImportError("capbench's version is neither installed (capbench/_version.py) nor in a source "
                          "tree's meson.build: reinstall capbench")
    return found.group(1)


__version__ = _release()
