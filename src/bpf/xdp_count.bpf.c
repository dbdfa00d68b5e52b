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

/*
 * Count-and-clone: the tap of several sensors on one stream (seed 004's
 * regeneration tap). Every frame that reaches the tap's interface is counted
 * as above (the "seen by the tap" stage), then sent to every interface of
 * `clone_to` with a devmap broadcast: the kernel (dev_map_enqueue_multi)
 * copies the frame for all but the last target (xdpf_clone, a page copy) and
 * transmits each with the target's ndo_xdp_xmit.
 *
 * What the code relies on:
 * - The kernel skips, without an error or a counter, every target whose
 *   device lacks NETDEV_XDP_ACT_NDO_XMIT (is_valid_dst). A veth has it only
 *   while its peer has an XDP program or GRO (veth_set_xdp_features): every
 *   sensor's capture veth must run its own XDP program (capbench-xdpcount,
 *   or the afxdp/xdp backends' own) before the tap sends.
 * - A devmap entry is the ifindex of the namespace of the process that
 *   writes it (dev_map_update_elem resolves it in current's namespace): the
 *   user-space side fills the map from inside the tap's namespace.
 * - A frame a target's ring has no room for is counted by that target
 *   (veth: its tx_queue_N_xdp_xmit_errors), not here.
 */
struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__uint(max_entries, CB_TAP_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u32);
} clone_to SEC(".maps");

SEC("xdp")
int cb_tap(struct xdp_md *ctx)
{
	struct cb_xdp_counts *c;

	cb_count_frame(ctx, &c);
	return bpf_redirect_map(&clone_to, 0, BPF_F_BROADCAST | BPF_F_EXCLUDE_INGRESS);
}
