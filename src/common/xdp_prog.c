/* SPDX-License-Identifier: MIT */
#include "xdp_prog.h"

#include <errno.h>
#include <linux/if_link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

int cb_xdp_attach(int prog_fd, const char *iface, int ifindex, uint32_t flags, char *why,
		  size_t why_len)
{
	LIBBPF_OPTS(bpf_link_create_opts, opts, .flags = flags);
	int fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &opts);
	int err = -errno;

	if (fd >= 0)
		return fd;
	if (err == -EBUSY || err == -EEXIST)
		snprintf(why, why_len, "%s already has an XDP program attached (one interface holds "
			 "only one): stop its owner or detach it (ip link set dev %s xdp off) and retry",
			 iface, iface);
	else
		snprintf(why, why_len, "cannot attach XDP in %s mode to %s: %s%s",
			 flags & XDP_FLAGS_SKB_MODE ? "generic" :
			 flags & XDP_FLAGS_DRV_MODE ? "native" : "the driver's", iface, strerror(-err),
			 flags & XDP_FLAGS_DRV_MODE ? " (try generic mode)" : "");
	return err;
}

const char *cb_xdp_attached_mode(int ifindex)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (bpf_xdp_query(ifindex, 0, &q))
		return "none";
	switch (q.attach_mode) {
	case XDP_ATTACHED_DRV: return "native";
	case XDP_ATTACHED_SKB: return "generic";
	case XDP_ATTACHED_HW: return "offload";
	default: return "none";
	}
}

int cb_xdp_percpu_fold(int map_fd, uint32_t key, uint64_t *out, size_t value_size,
		       uint64_t max_mask)
{
	int ncpu = libbpf_num_possible_cpus();
	size_t n = value_size / sizeof(uint64_t);
	uint64_t *vals;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	/* The kernel hands out one value per possible CPU, each rounded up
	 * to 8 bytes; ours are whole uint64_t already. */
	vals = calloc((size_t)ncpu, value_size);
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(map_fd, &key, vals))
		err = -errno;
	memset(out, 0, value_size);
	for (int c = 0; !err && c < ncpu; c++) {
		for (size_t i = 0; i < n; i++) {
			uint64_t v = vals[(size_t)c * n + i];

			if (max_mask & (1ull << i))
				out[i] = v > out[i] ? v : out[i];
			else
				out[i] += v;
		}
	}
	free(vals);
	return err;
}

int cb_xdp_read_counts(int map_fd, struct cb_xdp_counts *sum)
{
	uint64_t v[sizeof(*sum) / sizeof(uint64_t)] = { 0 };
	int err = cb_xdp_percpu_fold(map_fd, 0, v, sizeof(v), 0);

	sum->packets = v[0];
	sum->bytes = v[1];
	sum->capbench = v[2];
	sum->not_redirected = v[3];
	sum->trailer = v[4];
	return err;
}
