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

/*
 * The receive ring of a NIC's depth (--rx-mode cpumap). On a veth the
 * receive ring is fixed at 256 frames (VETH_RING_SIZE); a NIC's holds
 * 512-4096 descriptors. Here the capture veth's own poll (cb_to_ring, run on
 * the sending CPU) only moves each frame into the queue of a cpumap entry
 * for the receive CPU, whose depth (the entry's qsize) the user sets. The
 * entry's kernel thread, bound to that CPU (kernel/bpf/cpumap.c), takes
 * frames from the queue in batches of 8, runs cb_deliver on each, builds the
 * skb and hands it to the stack (netif_receive_skb_list: the packet taps see
 * it there). So the queue plays the NIC's ring and its thread the NIC's
 * poll, on the receive CPU.
 *
 * "delivered" is counted in cb_deliver, after the queue, as a NIC counts a
 * frame once its poll takes it from the ring: sent − delivered then holds
 * both rings' overflow (the veth's, the sender's xdp_xmit_errors; the
 * queue's, counted below) and nothing else.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, 1); /* set to the receive CPU + 1 before load */
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} rx_ring SEC(".maps");

const volatile __u32 ring_cpu; /* the receive CPU: rx_ring's one entry */
__u32 ring_map_id;             /* rx_ring's id, written after load */

SEC("xdp")
int cb_to_ring(struct xdp_md *ctx)
{
	(void)ctx;
	return bpf_redirect_map(&rx_ring, ring_cpu, 0);
}

SEC("xdp/cpumap")
int cb_deliver(struct xdp_md *ctx)
{
	struct cb_xdp_counts *c;

	cb_count_frame(ctx, &c);
	return XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cb_ring_counts);
} ring_counts SEC(".maps");

static __always_inline struct cb_ring_counts *ring_counts_here(void)
{
	__u32 key = 0;

	return bpf_map_lookup_elem(&ring_counts, &key);
}

/*
 * A full queue drops silently: bq_flush_to_queue (cpumap.c) frees every frame
 * __ptr_ring_produce refuses and reports only
 * trace_xdp_cpumap_enqueue(map_id, processed, drops, to_cpu), once per flush
 * of a per-CPU bulk of up to 8 frames. Every cpumap of the host fires it: the
 * map id and CPU pick this ring's. A raw tracepoint needs no tracefs.
 */
SEC("raw_tp/xdp_cpumap_enqueue")
int cb_ring_enqueue(struct bpf_raw_tracepoint_args *ctx)
{
	struct cb_ring_counts *c;

	if ((int)ctx->args[0] != (int)ring_map_id || (int)ctx->args[3] != (int)ring_cpu)
		return 0;
	c = ring_counts_here();
	if (c) {
		c->enqueued += (unsigned int)ctx->args[1];
		c->drops += (unsigned int)ctx->args[2];
	}
	return 0;
}

/* trace_xdp_cpumap_kthread(map_id, processed, drops, sched, stats): the
 * thread's drops are frames it took from the queue but could not make an skb
 * of (or that a cpumap program dropped: cb_deliver drops none). */
SEC("raw_tp/xdp_cpumap_kthread")
int cb_ring_kthread(struct bpf_raw_tracepoint_args *ctx)
{
	struct cb_ring_counts *c;

	if ((int)ctx->args[0] != (int)ring_map_id)
		return 0;
	c = ring_counts_here();
	if (c)
		c->kthread_drops += (unsigned int)ctx->args[2];
	return 0;
}
