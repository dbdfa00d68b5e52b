/* SPDX-License-Identifier: MIT */
/*
 * The xdploop engine's veth pair, in a network namespace of its own that no
 * name or mount holds: the kernel removes the namespace, and with it the
 * pair and their XDP programs, when the last file descriptor that refers to
 * it closes, so a capbench-gen stopped by any signal, SIGKILL too, leaves
 * nothing behind.
 */
#ifndef CAPBENCH_LOOP_LINK_H
#define CAPBENCH_LOOP_LINK_H

/* Move the calling thread into a new, unnamed network namespace; *ns_fd
 * then refers to it and *orig_fd to the one the thread was in. Returns 0 or
 * -errno. */
int gen_loop_ns_new(int *orig_fd, int *ns_fd);

/* Create the veth pair a <-> b in the calling thread's network namespace
 * with the given MTU, and set both up. Returns 0 or -errno (the kernel's
 * netlink answer). */
int gen_loop_veth_add(const char *a, const char *b, unsigned int mtu);

#endif
