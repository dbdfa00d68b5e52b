/* SPDX-License-Identifier: MIT */
/* The departure schedule as the BPF pacers read it (gen.h, gen_fill_schedule). */
#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>

#include "gen.h"

int gen_fill_schedule(int map_fd, const struct cb_schedule *sched)
{
	uint32_t *keys = malloc(sched->n * sizeof(*keys));
	uint32_t count = sched->n;
	int err;

	if (!keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < sched->n; i++)
		keys[i] = i;
	/* One call for the whole table: keys 0..n-1 in order. */
	err = bpf_map_update_batch(map_fd, keys, sched->e, &count, NULL);
	if (!err && count != sched->n)
		err = -EIO;
	free(keys);
	return err;
}
