/* SPDX-License-Identifier: MIT */
/* capbench-gen: the configuration every engine receives and the engine ops
 * table. An engine sends from its own thread; the main thread (gen.c) keeps
 * time, prints interval lines and tells the engine when to stop. */
#ifndef CAPBENCH_GEN_H
#define CAPBENCH_GEN_H

#include <stdint.h>

#include "packet.h"

struct gen_cfg {
	const char *iface;
	int ifindex;
	double link_bps;
	double pps;           /* target; 0 = unpaced */
	uint64_t gap_fp16;    /* ns between departures << 16; 0 = unpaced */
	uint64_t count;       /* frames to send; 0 = until stopped */
	double duration_s;    /* 0 = until stopped or count reached */
	double interval_s;
	int cpu;              /* -1 = not pinned */
	struct cb_frame_spec spec;
};

/* What an engine reports; all counts exact. */
struct gen_progress {
	uint64_t sent;
	uint64_t first_tx_ns;
	uint64_t last_tx_ns;
	uint64_t late;        /* frames that left more than one gap late */
	uint64_t max_lag_ns;
	uint64_t tx_busy;     /* sends the kernel refused for lack of room (retried) */
};

struct gen_engine {
	const char *name;
	const char *describe;
	/* Prepare everything that can fail on bad input or missing kernel
	 * support; returns 0 or -errno and may print one error line. */
	int (*open)(const struct gen_cfg *cfg, void **state);
	/* Start sending from a thread of the engine's own. */
	int (*start)(void *state);
	/* Progress so far; safe to call while sending. */
	void (*progress)(void *state, struct gen_progress *p);
	/* Nonzero once the engine stopped by itself (count reached, error). */
	int (*finished)(void *state);
	/* Stop sending and join the thread; returns the thread's error (0 or
	 * -errno). */
	int (*stop)(void *state);
	void (*close)(void *state);
};

extern const struct gen_engine gen_engine_xdp;
extern const struct gen_engine gen_engine_afpacket;

#endif
