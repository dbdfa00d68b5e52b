// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The afxdp backend's program: count every frame (the "delivered" stage:
 * what reached the interface, before the redirect), then redirect it to the
 * AF_XDP socket bound to the frame's receive queue.
 *
 * bpf_redirect_map() returns its flags argument when the XSKMAP has no
 * socket at that index, so frames of a queue nobody captures go on to the
 * stack (XDP_PASS) and are counted in not_redirected. A frame that is
 * redirected but finds no room in the socket's rings is dropped by the
 * kernel and counted in the socket's XDP_STATISTICS.
 */
#include "cb_frame.bpf.h"

/* One slot per receive queue. Named xsks_map: DPDK's net_af_xdp, given this
 * object with xdp_prog= (the dpdk backend), puts its sockets into the map of
 * that name. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, CB_XSK_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

SEC("xdp")
int cb_xsk(struct xdp_md *ctx)
{
	struct cb_xdp_counts *c;
	long ret;

	cb_count_frame(ctx, &c);
	ret = bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
	if (ret != XDP_REDIRECT && c)
		c->not_redirected++;
	return (int)ret;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
