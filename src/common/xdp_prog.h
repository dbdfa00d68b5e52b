/* SPDX-License-Identifier: MIT */
/* Attaching capbench's XDP programs and reading their per-CPU counters
 * (user space; links libbpf). */
#ifndef CAPBENCH_XDP_PROG_H
#define CAPBENCH_XDP_PROG_H

#include <stddef.h>
#include <stdint.h>

#include "xdp_counts.h"

/* Attach the XDP program prog_fd to ifindex through a bpf_link. The kernel
 * detaches it when the last descriptor of the link is closed, so also when
 * the process exits for whatever reason (a signal, a crash, SIGKILL).
 * flags: 0 (native if the driver has it, else generic), XDP_FLAGS_DRV_MODE
 * or XDP_FLAGS_SKB_MODE. Returns the link's fd, or -errno with one line
 * for the user in why (naming the fix). */
int cb_xdp_attach(int prog_fd, const char *iface, int ifindex, uint32_t flags, char *why,
		  size_t why_len);
/* The mode of the program attached to ifindex: "native", "generic",
 * "offload", or "none". */
const char *cb_xdp_attached_mode(int ifindex);
/* Read entry `key` of a per-CPU array whose values are arrays of uint64_t
 * (value_size bytes, a multiple of 8): out[i] is the sum over all CPUs of
 * counter i, or, for the counters whose bit is set in max_mask, the
 * highest value of any CPU. Returns 0 or -errno. */
int cb_xdp_percpu_fold(int map_fd, uint32_t key, uint64_t *out, size_t value_size,
		       uint64_t max_mask);
/* The struct cb_xdp_counts of a "counts" map, summed over the CPUs. */
int cb_xdp_read_counts(int map_fd, struct cb_xdp_counts *sum);

#endif
