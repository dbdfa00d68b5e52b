// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Pass-and-count: counts every frame that reaches the capture interface and
 * how many of them are capbench frames, then passes it on to the stack.
 * This is the "delivered" stage of capbench's loss account. On veth it also
 * gives the receiving queue a NAPI instance, which frames that the XDP
 * generator redirects into the pair need (veth_xdp_xmit refuses them
 * otherwise).
 */
#include "cb_frame.bpf.h"

SEC("xdp")
int cb_count(struct xdp_md *ctx)
{
	struct cb_xdp_counts *c;

	cb_count_frame(ctx, &c);
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
