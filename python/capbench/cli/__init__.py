"""The `capbench` command line (`capbench.cli.main:main`), one module per job:

main         argv -> command, the one-line error and the exit status
parser       the argparse tree and its help texts
described    help texts and lists from the C programs' declarations (--describe)
run          `capbench run`: the campaign the flags describe, run with the callbacks that show it
testbed      `capbench testbed up|down|status`
passthrough  `capbench gen|capture|xdpcount`: the C programs with their options, signals forwarded
info         `capbench backends|report|compare`

The command line is the top layer: it imports the rest of capbench, nothing imports it
(tests/py/test_layers.py).
"""
