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
 * All state lives in global variables (an mmap-able array map), so user
 * space reads the exact sent count while the program runs. The program runs
 * on one CPU only (the calling thread's, migration disabled), so plain
 * read-modify-write of the globals is safe.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "stamp.h"

/* Set through the skeleton before load. */
const volatile __u32 tx_ifindex = 0;
const volatile __u64 gap_fp16 = 0;     /* ns between departures << 16; 0 = unpaced */
const volatile __u64 count_limit = 0;  /* stop sending after this many; 0 = none */

/* Read by user space while the program runs. */
__u64 sent = 0;
__u64 start_ns = 0;     /* schedule origin: departure of frame 0 */
__u64 first_tx_ns = 0;
__u64 last_tx_ns = 0;
__u64 late = 0;         /* frames that left more than one gap after schedule */
__u64 max_lag_ns = 0;
__u64 spins = 0;        /* iterations that found no frame due */

SEC("xdp")
int cb_gen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	unsigned char *stamp = (unsigned char *)data + CB_STAMP_OFF;
	__u64 now, seq = sent, magic = CB_STAMP_MAGIC;

	if (stamp + CB_STAMP_LEN > (unsigned char *)data_end)
		return XDP_ABORTED;
	if (count_limit && seq >= count_limit)
		return XDP_DROP;

	now = bpf_ktime_get_ns();
	if (!start_ns)
		start_ns = now;
	if (gap_fp16) {
		/* Departure n is due at start + n * gap: computing it from
		 * the origin, not from the previous departure, keeps the mean
		 * rate exact however late single frames leave. */
		__u64 due = start_ns + ((seq * gap_fp16) >> 16);
		__u64 lag;

		if (now < due) {
			spins++;
			return XDP_DROP;
		}
		lag = now - due;
		if ((lag << 16) > gap_fp16)
			late++;
		if (lag > max_lag_ns)
			max_lag_ns = lag;
	}

	/* The frame buffer keeps what earlier iterations wrote, so every
	 * departure writes the whole stamp. */
	__builtin_memcpy(stamp, &magic, 2);
	__builtin_memcpy(stamp + 2, &seq, 8);
	__builtin_memcpy(stamp + 10, &now, 8);

	if (!seq)
		first_tx_ns = now;
	last_tx_ns = now;
	sent = seq + 1;
	return bpf_redirect(tx_ifindex, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
