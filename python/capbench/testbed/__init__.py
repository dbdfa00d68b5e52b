"""The test bed layer: the host and its network namespaces.

veth pairs in namespaces (veth_pair, netns), the receive mode and host settings
they need (rxmode, host_sysctl), CPUs (cpu), child processes (procs) and their
cgroups (cgroups), what this host can do (preflight) and what a run left behind
(hygiene). Imports only the
shared top-level modules of capbench.
"""
