/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What both generator programs (gen.bpf.c, BPF_PROG_RUN's live frames; and
 * gen_loop.bpf.c, frames circling a veth loop) do to a departing frame: cut
 * it to its schedule length and stamp it (the due check and its catch-up
 * rule are pacing.h's, shared with the afpacket engine). Included by those
 * *.bpf.c files only.
 */
#ifndef CAPBENCH_GEN_FRAME_BPF_H
#define CAPBENCH_GEN_FRAME_BPF_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "pacing.h"
#include "stamp.h"

/* The departure schedule (schedule.h): entry i holds frame i's length and
 * the gap to the next departure; user space sizes and fills it before the
 * run (gen_fill_schedule). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct cb_sched_entry);
	__uint(max_entries, 1);
} schedule SEC(".maps");

/* Shrink a frame of `cur_len` bytes (the full-length template, without FCS)
 * to `len` (incl. FCS) and make its IPv4 and UDP lengths and the IPv4
 * checksum match. The bytes of a reused frame keep what earlier departures
 * wrote: every departure rewrites the header fields. */
static __always_inline int cb_gen_set_len(struct xdp_md *ctx, __u32 cur_len, __u32 len)
{
	void *data, *data_end;
	__u16 *ip;
	__u8 *udp;
	__u32 sum = 0;
	int delta = (int)(len - CB_FCS_LEN) - (int)cur_len;

	if (delta && bpf_xdp_adjust_tail(ctx, delta))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	ip = data + CB_ETH_HLEN;
	udp = data + CB_ETH_HLEN + CB_IP_HLEN;
	if ((void *)(udp + CB_UDP_HLEN) > data_end)
		return -1;
	ip[1] = bpf_htons(len - CB_FCS_LEN - CB_ETH_HLEN);
	ip[5] = 0;
	/* The ones'-complement sum does not depend on byte order. */
#pragma unroll
	for (int i = 0; i < CB_IP_HLEN / 2; i++)
		sum += ip[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	ip[5] = (__u16)~sum;
	*(__u16 *)(udp + 4) = bpf_htons(len - CB_FCS_LEN - CB_ETH_HLEN - CB_IP_HLEN);
	return 0;
}

/* Write the whole stamp (a reused frame keeps what earlier departures wrote). */
static __always_inline int cb_gen_stamp(struct xdp_md *ctx, __u64 seq, __u64 now)
{
	unsigned char *data = (unsigned char *)(long)ctx->data;
	unsigned char *stamp = data + CB_STAMP_OFF;
	__u64 magic = CB_STAMP_MAGIC;

	if (stamp + CB_STAMP_LEN > (unsigned char *)(long)ctx->data_end)
		return -1;
	__builtin_memcpy(stamp, &magic, 2);
	__builtin_memcpy(stamp + 2, &seq, 8);
	__builtin_memcpy(stamp + 10, &now, 8);
	return 0;
}

#endif
