/* SPDX-License-Identifier: MIT */
/*
 * One AF_PACKET socket with its own TPACKET_V3 block ring: set-up, the
 * batched read loop and statistics. Used by the afp-v3 backend (one ring)
 * and the fanout backend (one ring per worker).
 */
#ifndef CAPBENCH_TPACKET_V3_H
#define CAPBENCH_TPACKET_V3_H

#include <linux/if_packet.h>
#include <stddef.h>
#include <stdint.h>

#include "cap.h"

#define V3_DEFAULT_BLOCK_SIZE  (1u << 20)
#define V3_DEFAULT_BLOCK_COUNT 32u
#define V3_DEFAULT_TIMEOUT_MS  10u

/* --block-size: a power of two from the page size (the kernel allocates
 * blocks in page orders) up to 1G. */
int v3_block_size_invalid(uint64_t v);
void v3_block_size_fix(char *buf, size_t len);

/* The ring's options, rows of the afp-v3 and fanout tables alike. */
#define V3_RING_OPTIONS                                                                      \
	{ .name = "block-size", .type = CB_OPT_BYTES, .arg = "BYTES", .min = 4096,             \
	  .max = 1u << 30, .has_default = 1, .def = V3_DEFAULT_BLOCK_SIZE,                       \
	  .help = "ring block size, a power-of-two multiple of the page size",                  \
	  .valid = v3_block_size_invalid, .fix_fn = v3_block_size_fix,                          \
	  .tunable = 1, .tune_min = 64u << 10, .tune_max = 4u << 20,                           \
	  CB_OPT_AT(struct cap_cfg, block_size) },                                             \
	{ .name = "block-count", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = 65536,     \
	  .has_default = 1, .def = V3_DEFAULT_BLOCK_COUNT, .help = "blocks per ring",           \
	  .what = "blocks", .fix = "give 1..65536", .tunable = 1, .tune_min = 4,               \
	  .tune_max = 128, CB_OPT_AT(struct cap_cfg, block_count) },                           \
	{ .name = "block-timeout", .type = CB_OPT_MS, .arg = "MS", .min = 1, .max = 60000,     \
	  .has_default = 1, .def = V3_DEFAULT_TIMEOUT_MS,                                      \
	  .help = "hand over a partly filled block after MS ms", .fix = "give 1..60000 ms",     \
	  CB_OPT_AT(struct cap_cfg, block_timeout_ms) }

struct v3_ring {
	int fd;
	uint8_t *ring;
	size_t ring_len;
	struct tpacket_req3 req;
	struct cap_kstats kstats; /* running totals; touched by the main thread only */
};

/* The ring cfg asks for (the defaults if 0): blocks and block size, and
 * its bytes. */
uint64_t v3_ring_geometry(const struct cap_cfg *cfg, uint32_t *block_size, uint32_t *block_count);
/* Open the socket, map a ring of cfg->block_size x cfg->block_count (the
 * defaults if 0) and bind it to cfg->iface. Prints one error line; returns
 * 0 or -errno. */
int v3_ring_open(const struct cap_cfg *cfg, struct v3_ring *r);
/* The read loop (worker thread): every block the kernel hands over, until
 * *w->stop, then the blocks still queued. Returns 0 or -errno. */
int v3_ring_run(struct v3_ring *r, struct cap_worker *w);
/* Add what PACKET_STATISTICS counted since the last call to r->kstats. */
void v3_ring_stats(struct v3_ring *r);
void v3_ring_close(struct v3_ring *r);

#endif
