// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The xdp backend's program, the ceiling: count every frame and drop it in
 * the driver, before any sk_buff exists. What it counts is what reaches the
 * host; no capture method can receive more.
 *
 * Per stream it also keeps the number of capbench frames and the highest
 * sequence number seen (both per CPU; user space sums the counts and takes
 * the highest number), so "lost below the highest number" is
 * next - frames. That is exact as long as no frame arrives twice: the
 * program keeps no bitmap, so it cannot tell duplicates or reordering.
 */
#include "cb_frame.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CB_XDP_STREAMS);
	__type(key, __u32);
	__type(value, struct cb_xdp_stream);
} streams SEC(".maps");

SEC("xdp")
int cb_ceiling(struct xdp_md *ctx)
{
	struct cb_xdp_counts *c;
	const unsigned char *p = cb_count_frame(ctx, &c);
	struct cb_xdp_stream *s;
	__u64 seq;
	__u32 key;

	if (!p)
		return XDP_DROP;
	/* The stream id is the low byte of the UDP source port (big-endian). */
	key = p[CB_ETH_HLEN + CB_IP_HLEN + 1];
	s = bpf_map_lookup_elem(&streams, &key);
	if (s) {
		__builtin_memcpy(&seq, p + CB_STAMP_OFF + 2, sizeof(seq));
		s->frames++;
		if (seq + 1 > s->next)
			s->next = seq + 1;
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
