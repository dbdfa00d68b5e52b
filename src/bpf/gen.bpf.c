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
#include "gen_frame.bpf.h"

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

SEC("xdp")
int cb_gen(struct xdp_md *ctx)
{
	struct cb_sched_entry *e;
	__u64 now, seq = sent;
	__u32 idx = pace.idx;

	if (count_limit && seq >= count_limit)
		return XDP_DROP;
	e = bpf_map_lookup_elem(&schedule, &idx);
	if (!e)
		return XDP_ABORTED;

	now = bpf_ktime_get_ns();
	if (!start_ns)
		start_ns = now;
	/* Not due yet: XDP_DROP recycles the frame at once for the next look at the clock. */
	if (paced && !cb_gen_due(now, start_ns, &pace, e, catchup_ns, wire_tat_ns, &late, &max_lag_ns)) {
		spins++;
		return XDP_DROP;
	}
	if (vary_len && cb_gen_set_len(ctx, buf_len, e->len))
		return XDP_ABORTED;

	if (cb_gen_stamp(ctx, seq, now))
		return XDP_ABORTED;

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
	wire_tat_ns = cb_gen_wire_tat(wire_tat_ns, now, e, wire_lanes);
	sent = seq + 1;
	return bpf_redirect(tx_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
