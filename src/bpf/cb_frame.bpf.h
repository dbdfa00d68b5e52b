/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Reading the capbench frame (stamp.h) inside an XDP program, and the
 * per-CPU counters every capbench XDP program keeps. Included by the
 * *.bpf.c files only.
 */
#ifndef CAPBENCH_CB_FRAME_BPF_H
#define CAPBENCH_CB_FRAME_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "stamp.h"
#include "xdp_counts.h"

/* Per-CPU, so concurrent receive queues never contend; user space sums. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cb_xdp_counts);
} counts SEC(".maps");

/* The stamp's magic of an Ethernet / IPv4 (no options) / UDP frame to
 * CB_UDP_DST_PORT, else 0. The caller has checked that the stamp lies inside
 * the frame. */
static __always_inline __u16 cb_stamp_magic(const unsigned char *p)
{
	__u16 magic;

	if (p[12] != 0x08 || p[13] != 0x00 || p[14] != 0x45 || p[23] != 17)
		return 0;
	if (((p[36] << 8) | p[37]) != CB_UDP_DST_PORT)
		return 0;
	__builtin_memcpy(&magic, p + CB_STAMP_OFF, 2);
	return magic;
}

/* A capbench data frame (a trailer is not one). */
static __always_inline int cb_is_capbench(const unsigned char *p)
{
	return cb_stamp_magic(p) == CB_STAMP_MAGIC;
}

/* Count the frame in this CPU's counters; returns the frame's start if it is
 * a capbench frame (its stamp readable), else NULL. */
static __always_inline const unsigned char *cb_count_frame(struct xdp_md *ctx,
							   struct cb_xdp_counts **out)
{
	const unsigned char *data = (const void *)(long)ctx->data;
	const unsigned char *end = (const void *)(long)ctx->data_end;
	__u32 key = 0;
	struct cb_xdp_counts *c = bpf_map_lookup_elem(&counts, &key);

	*out = c;
	if (!c)
		return 0;
	c->packets++;
	c->bytes += end - data;
	if (data + CB_STAMP_OFF + CB_STAMP_LEN > end)
		return 0;
	switch (cb_stamp_magic(data)) {
	case CB_STAMP_MAGIC:
		c->capbench++;
		return data;
	case CB_TRAILER_MAGIC:
		c->trailer++;
		return 0;
	default:
		return 0;
	}
}

#endif
