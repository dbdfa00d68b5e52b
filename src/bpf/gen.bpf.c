// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The XDP generator's pacer. User space runs this program with
 * BPF_PROG_RUN and BPF_F_TEST_XDP_LIVE_FRAMES: the kernel calls it in a loop
 * over frames from a page pool initialised with our template frame, and
 * every frame we return XDP_REDIRECT for is transmitted on tx_ifindex.
 *
 * Each call of BPF_PROG_RUN costs tens of milliseconds of set-up, so one
 * call lasts the whole trial and pacing happens here: a frame whose
 * departure time has not come yet is dropped (XDP_DROP recycles it at once,
 * about 100 ns per spin) and the next iteration looks at the clock again.
 * The kernel loop stops when the calling thread has a signal pending.
 *
 * Frame lengths and gaps come from the schedule map (schedule.h); a
 * shorter frame is cut from the longest with bpf_xdp_adjust_tail.
 *
 * All state lives in global variables (an mmap-able array map), so user
 * space reads the exact sent count while the program runs. The program runs
 * on one CPU only (the calling thread's, migration disabled), so plain
 * read-modify-write of the globals is safe.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "pacing.h"
#include "stamp.h"

/* The departure schedule (schedule.h): entry i holds frame i's length and
 * the gap to the next departure; user space sizes and fills it before the
 * run. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct cb_sched_entry);
	__uint(max_entries, 1);
} schedule SEC(".maps");

/* Set through the skeleton before load. */
const volatile __u32 tx_ifindex = 0;
const volatile struct cb_pace_cfg pace_cfg = {};
const volatile __u32 buf_len = 0;      /* the template: the longest frame less its FCS */
const volatile __u8 paced = 0;         /* 0: send every iteration (--rate max) */
const volatile __u8 vary_len = 0;      /* the schedule holds more than one length */
const volatile __u64 count_limit = 0;  /* stop sending after this many; 0 = none */
const volatile __u32 wire_lanes = 1;   /* sending threads sharing the link (--threads) */
const volatile __u64 catchup_ns = 0;   /* --catch-up: how far ahead of the wire a late lane may get */

/* Read by user space while the program runs. */
__u64 sent = 0;
__u64 wire_bytes = 0;   /* frame lengths incl. FCS + 20 B preamble/gap each */
__u64 start_ns = 0;     /* schedule origin: departure of frame 0 */
struct cb_pace_state pace = {}; /* the next departure after start_ns and entry */
__u64 first_tx_ns = 0;
__u64 last_tx_ns = 0;
__u64 last_due_ns = 0;  /* scheduled departure of the last frame sent, after start_ns */
__u64 late = 0;         /* frames that left more than one gap after schedule */
__u64 max_lag_ns = 0;
__u64 spins = 0;        /* iterations that found no frame due */
/* The link's theoretical departure time (GCRA): a frame may leave when the
 * clock is at most catchup_ns before it; each departure moves it on by the
 * frame's wire time, from the later of itself and the departure. */
__u64 wire_tat_ns = 0;

/* Shrink the full-length template to `len` (incl. FCS) and make its IPv4 and
 * UDP lengths and the IPv4 checksum match. The kernel restores data_end for
 * the next iteration (a live frame whose data/data_end changed is reset), but
 * not the bytes: every departure rewrites the header fields. */
static __always_inline int set_len(struct xdp_md *ctx, __u32 len)
{
	void *data, *data_end;
	__u16 *ip;
	__u8 *udp;
	__u32 sum = 0;
	int delta = (int)(len - CB_FCS_LEN) - (int)buf_len;

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

SEC("xdp")
int cb_gen(struct xdp_md *ctx)
{
	void *data, *data_end;
	unsigned char *stamp;
	struct cb_sched_entry *e;
	__u64 now, seq = sent, magic = CB_STAMP_MAGIC;
	__u32 idx = pace.idx;

	if (count_limit && seq >= count_limit)
		return XDP_DROP;
	e = bpf_map_lookup_elem(&schedule, &idx);
	if (!e)
		return XDP_ABORTED;

	now = bpf_ktime_get_ns();
	if (!start_ns)
		start_ns = now;
	if (paced) {
		/* Departure n is due at start + the sum of the gaps before it:
		 * kept from the origin, not from the previous departure, so
		 * the mean rate stays exact however late single frames leave. */
		__u64 due = start_ns + (pace.due_fp16 >> 16);
		__u64 lag;

		/* A generator that fell behind catches up at most
		 * --catch-up frames faster than the emulated link carries
		 * them (its share of the link with several threads), then at
		 * the link's wire rate: a longer burst would meet the
		 * receiver with more than it can buffer, a load no link of
		 * that speed makes. At 100 % of the wire rate the rest of a
		 * lag stays: the sending time grows and the achieved rate
		 * says so. */
		if (now < due || now + catchup_ns < wire_tat_ns) {
			spins++;
			return XDP_DROP;
		}
		lag = now - due;
		if ((lag << 16) > e->gap_fp16)
			late++;
		if (lag > max_lag_ns)
			max_lag_ns = lag;
	}
	if (vary_len && set_len(ctx, e->len))
		return XDP_ABORTED;

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	stamp = (unsigned char *)data + CB_STAMP_OFF;
	if (stamp + CB_STAMP_LEN > (unsigned char *)data_end)
		return XDP_ABORTED;
	/* The frame buffer keeps what earlier iterations wrote, so every
	 * departure writes the whole stamp. */
	__builtin_memcpy(stamp, &magic, 2);
	__builtin_memcpy(stamp + 2, &seq, 8);
	__builtin_memcpy(stamp + 10, &now, 8);

	if (!seq)
		first_tx_ns = now;
	last_tx_ns = now;
	last_due_ns = pace.due_fp16 >> 16;
	{
		/* Field by field: read through `volatile`, so the values user
		 * space set before load are used, not the zeros in the object. */
		const struct cb_pace_cfg c = {
			.group_size = pace_cfg.group_size,
			.group_gap_fp16 = pace_cfg.group_gap_fp16,
			.burst = pace_cfg.burst,
			.sched_len = pace_cfg.sched_len,
		};

		cb_pace_advance(&c, &pace, e, seq);
	}
	wire_bytes += e->len + CB_WIRE_OVERHEAD;
	wire_tat_ns = (wire_tat_ns > now ? wire_tat_ns : now) + ((e->wire_fp16 * wire_lanes) >> 16);
	sent = seq + 1;
	return bpf_redirect(tx_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
