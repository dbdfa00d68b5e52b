// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The xdploop generator engine's programs (src/gen/engine_xdploop.c): XDP
 * frames that circle a veth pair of their own, sent without BPF_PROG_RUN.
 *
 * Only frames a veth gets through ndo_xdp_xmit (XDP_TX, XDP_REDIRECT) reach
 * the receiving veth's XDP program as they are; an skb from any socket is
 * copied once more into a page-pool page there (veth_xdp_rcv_skb), so a
 * socket engine pays that copy for every frame. Here user space seeds a few
 * frames once into the loop pair L0/L1; from then on they live as xdp_frames:
 *
 *   L0: cb_loop_bounce  XDP_TX: back to L1.
 *   L1: cb_loop_emit    claims the frames due now (at most `copies`) and
 *                       redirects with BPF_F_BROADCAST into the devmap of that
 *                       many: entry 0 is L1 itself (the frame goes round
 *                       again), entries 1..n the generator's interface; the
 *                       devmap clones the frame for every entry but the last
 *                       (xdpf_clone). Nothing due: XDP_TX, round again.
 *   devmap egress on the interface's entries: cb_loop_stamp gives each copy
 *                       its schedule length, sequence number and departure
 *                       time, in the order the copies leave.
 *
 * Pacing is the due check gen.bpf.c makes (gen_frame.bpf.h), made once per
 * pass of a frame through L1: a loop of K frames looks at the clock K times a
 * round. Everything runs in the softirq of the CPU that seeded the loop (each
 * veth's NAPI is scheduled where its peer transmitted), so the globals are
 * touched from one CPU only and user space reads them through the mmap'd bss.
 *
 * sent counts the copies stamped and handed to the interface's ndo_xdp_xmit;
 * claimed - sent are copies the engine itself could not hand over (a failed
 * clone or length change). What the interface refused (its ring full) is its
 * own counter: a veth's tx_queue_N_xdp_xmit_errors.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "gen_frame.bpf.h"
#include "pacing.h"
#include "stamp.h"

#define LOOP_MAX_COPIES 8 /* gen.h: GEN_LOOP_MAX_COPIES */

/* outN: entry 0 the loop's L1, entries 1..N the generator's interface (with
 * cb_loop_stamp as its egress program). */
#define OUT_MAP(n)                                                   \
	struct {                                                     \
		__uint(type, BPF_MAP_TYPE_DEVMAP);                   \
		__uint(key_size, sizeof(__u32));                     \
		__uint(value_size, sizeof(struct bpf_devmap_val));   \
		__uint(max_entries, LOOP_MAX_COPIES + 1);            \
	} out##n SEC(".maps")
OUT_MAP(1);
OUT_MAP(2);
OUT_MAP(3);
OUT_MAP(4);
OUT_MAP(5);
OUT_MAP(6);
OUT_MAP(7);
OUT_MAP(8);

/* Set through the skeleton before load. */
const volatile struct cb_pace_cfg pace_cfg = {};
const volatile __u32 buf_len = 0;      /* the loop's frames: the longest length less its FCS */
const volatile __u8 paced = 0;         /* 0: every pass claims `copies` frames (--rate max) */
const volatile __u8 vary_len = 0;
const volatile __u32 copies = 1;       /* copies a pass may send */
const volatile __u64 count_limit = 0;  /* claim no more than this; 0 = none */
const volatile __u32 wire_lanes = 1;
const volatile __u64 catchup_ns = 0;
const volatile __u64 run_limit_ns = 0; /* the loop ends this long after its first pass; 0 = never */

/* Written by user space. */
__u32 stop = 0;                        /* nonzero: every loop frame is dropped, the loop ends */

/* Read by user space while the loop runs. */
__u64 claimed = 0;      /* departures due and handed to the devmap */
__u64 sent = 0;         /* copies stamped and handed to the interface */
__u64 wire_bytes = 0;
__u64 start_ns = 0;
struct cb_pace_state pace = {};
__u64 first_tx_ns = 0;
__u64 last_tx_ns = 0;
__u64 last_due_ns = 0;
__u64 late = 0;
__u64 max_lag_ns = 0;
__u64 passes = 0;       /* frames through L1 */
__u64 spins = 0;        /* passes that found nothing due */
__u64 wire_tat_ns = 0;
__u32 stamp_idx = 0;    /* the schedule entry of the next copy stamped */

/* One of the loop's frames (a capbench data frame; the kernel's own frames
 * on L0/L1, such as IPv6 neighbour discovery, are dropped). */
static __always_inline int ours(struct xdp_md *ctx)
{
	const unsigned char *p = (const void *)(long)ctx->data;
	__u16 magic;

	if (p + CB_STAMP_OFF + CB_STAMP_LEN > (const unsigned char *)(long)ctx->data_end)
		return 0;
	if (p[12] != 0x08 || p[13] != 0x00 || p[23] != 17)
		return 0;
	__builtin_memcpy(&magic, p + CB_STAMP_OFF, 2);
	return magic == CB_STAMP_MAGIC;
}

static __always_inline int ended(void)
{
	return stop || (count_limit && claimed >= count_limit) ||
	       (run_limit_ns && start_ns && bpf_ktime_get_ns() - start_ns > run_limit_ns);
}

SEC("xdp")
int cb_loop_bounce(struct xdp_md *ctx)
{
	return ours(ctx) && !ended() ? XDP_TX : XDP_DROP;
}

SEC("xdp")
int cb_loop_emit(struct xdp_md *ctx)
{
	const struct cb_pace_cfg c = {
		.group_size = pace_cfg.group_size,
		.group_gap_fp16 = pace_cfg.group_gap_fp16,
		.burst = pace_cfg.burst,
		.sched_len = pace_cfg.sched_len,
	};
	__u32 n = 0;
	__u64 now;

	if (!ours(ctx) || ended())
		return XDP_DROP;
	now = bpf_ktime_get_ns();
	if (!start_ns)
		start_ns = now;
	passes++;
	for (__u32 i = 0; i < LOOP_MAX_COPIES; i++) {
		struct cb_sched_entry *e;
		__u32 idx = pace.idx;

		if (i >= copies || (count_limit && claimed >= count_limit))
			break;
		e = bpf_map_lookup_elem(&schedule, &idx);
		if (!e)
			break;
		if (paced && !cb_gen_due(now, start_ns, &pace, e, catchup_ns, wire_tat_ns, &late,
					 &max_lag_ns))
			break;
		last_due_ns = pace.due_fp16 >> 16;
		cb_pace_advance(&c, &pace, e, claimed);
		wire_tat_ns = cb_gen_wire_tat(wire_tat_ns, now, e, wire_lanes);
		claimed++;
		n++;
	}
	switch (n) {
	case 0:
		spins++;
		return XDP_TX;
	case 1: return bpf_redirect_map(&out1, 0, BPF_F_BROADCAST);
	case 2: return bpf_redirect_map(&out2, 0, BPF_F_BROADCAST);
	case 3: return bpf_redirect_map(&out3, 0, BPF_F_BROADCAST);
	case 4: return bpf_redirect_map(&out4, 0, BPF_F_BROADCAST);
	case 5: return bpf_redirect_map(&out5, 0, BPF_F_BROADCAST);
	case 6: return bpf_redirect_map(&out6, 0, BPF_F_BROADCAST);
	case 7: return bpf_redirect_map(&out7, 0, BPF_F_BROADCAST);
	default: return bpf_redirect_map(&out8, 0, BPF_F_BROADCAST);
	}
}

SEC("xdp/devmap")
int cb_loop_stamp(struct xdp_md *ctx)
{
	__u32 idx = stamp_idx;
	struct cb_sched_entry *e = bpf_map_lookup_elem(&schedule, &idx);
	__u64 seq = sent, now;

	if (!e)
		return XDP_DROP;
	if (vary_len && cb_gen_set_len(ctx, buf_len, e->len))
		return XDP_DROP;
	now = bpf_ktime_get_ns();
	if (cb_gen_stamp(ctx, seq, now))
		return XDP_DROP;
	if (!seq)
		first_tx_ns = now;
	last_tx_ns = now;
	wire_bytes += e->len + CB_WIRE_OVERHEAD;
	stamp_idx = idx + 1 == pace_cfg.sched_len ? 0 : idx + 1;
	sent = seq + 1;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
