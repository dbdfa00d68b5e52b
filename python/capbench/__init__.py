"""capbench: an open, reproducible packet-capture benchmark for Linux.

The Python package drives the C programs (capbench-gen, capbench-cap,
capbench-xdpcount), builds the veth test bed, runs the methods and writes
and prints the results.
"""

__version__ = "0.1.0"
