// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test only (tests/e2e/test_e2e_exact_counts.py): an XDP program for the
 * capture veth that drops the data frames of stream 0 with sequence numbers
 * in [DROP_FROM, DROP_TO) and passes everything else, trailer frames
 * included. The bounds are set at build time (meson.build), so that
 * `ip link set ... xdp obj` loads it as it is.
 *
 * XDP runs in the veth's NAPI poll, before an skb exists, so the dropped
 * frames never reach a packet socket's tap (which sees frames before tc
 * ingress: a tc or netfilter ingress drop would come too late). The veth
 * counts them in `ethtool -S`'s rx_queue_0_xdp_drops.
 */
#include "cb_frame.bpf.h"

#ifndef DROP_FROM
#error "build with -DDROP_FROM=N -DDROP_TO=M"
#endif

SEC("xdp")
int cb_drop_tail(struct xdp_md *ctx)
{
	const unsigned char *data = (const void *)(long)ctx->data;
	const unsigned char *end = (const void *)(long)ctx->data_end;
	__u64 seq;

	if (data + CB_STAMP_OFF + CB_STAMP_LEN > end || !cb_is_capbench(data))
		return XDP_PASS;
	if (((data[34] << 8) | data[35]) != CB_UDP_SRC_PORT_BASE)
		return XDP_PASS; /* not stream 0 */
	__builtin_memcpy(&seq, data + CB_STAMP_OFF + 2, 8);
	return seq >= DROP_FROM && seq < DROP_TO ? XDP_DROP : XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
