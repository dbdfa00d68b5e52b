// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Pass-and-count: counts every frame that reaches the capture interface and
 * how many of them are capbench frames, then passes it on to the stack.
 * This is the "delivered" stage of capbench's loss account. On veth it also
 * gives the receiving queue a NAPI instance, which frames that the XDP
 * generator redirects into the pair need (veth_xdp_xmit refuses them
 * otherwise).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "stamp.h"

struct cb_counts {
	__u64 packets;
	__u64 bytes;
	__u64 capbench;
};

/* Per-CPU, so concurrent receive queues never contend; user space sums. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cb_counts);
} counts SEC(".maps");

static __always_inline int is_capbench(const unsigned char *p, const void *end)
{
	__u16 magic;

	if (p + CB_STAMP_OFF + CB_STAMP_LEN > (const unsigned char *)end)
		return 0;
	if (p[12] != 0x08 || p[13] != 0x00 || p[14] != 0x45 || p[23] != 17)
		return 0;
	if (((p[36] << 8) | p[37]) != CB_UDP_DST_PORT)
		return 0;
	__builtin_memcpy(&magic, p + CB_STAMP_OFF, 2);
	return magic == CB_STAMP_MAGIC;
}

SEC("xdp")
int cb_count(struct xdp_md *ctx)
{
	const unsigned char *data = (const void *)(long)ctx->data;
	const void *data_end = (const void *)(long)ctx->data_end;
	__u32 key = 0;
	struct cb_counts *c = bpf_map_lookup_elem(&counts, &key);

	if (!c)
		return XDP_PASS;
	c->packets++;
	c->bytes += (const unsigned char *)data_end - data;
	if (is_capbench(data, data_end))
		c->capbench++;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
