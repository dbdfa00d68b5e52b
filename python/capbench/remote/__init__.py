"""Several hosts: the SSH layer (`ssh`), the topology file (`topology`), the checks that a host
runs the same capbench and has what a run needs (`version`), and the clock offset (`clock`).

A layer beside the test bed (tests/py/test_layers.py): it starts programs the way the test bed
does (testbed.procs.Child), on a host of the topology instead of a namespace of this machine.
"""
