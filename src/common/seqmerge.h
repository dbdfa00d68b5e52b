/* SPDX-License-Identifier: MIT */
/*
 * The sequence numbers of several workers merged into one set: the union of
 * what they captured, so a frame that any worker saw counts once.
 *
 * Each worker keeps its own cb_seqset (its own view, with the reordering it
 * saw on its socket) and stages every number that was new to it in its
 * cb_seqstage. Once per batch, or when the stage is full, it flushes the
 * stage into the shared cb_seqmerge under a mutex: one lock per batch, no
 * shared cache line written per packet.
 *
 * The shared set receives each worker's numbers in batches, interleaved in
 * whatever order the workers flush, so its own reordering count describes
 * the flushes, not the wire, and is not used. Its distinct, duplicate and
 * lost counts are exact while no worker flushes more than CB_SEQ_WINDOW
 * numbers behind another; a number further behind is taken as new
 * (too_old).
 */
#ifndef CAPBENCH_SEQMERGE_H
#define CAPBENCH_SEQMERGE_H

#include <pthread.h>
#include <stdint.h>

#include "seqtrack.h"

struct cb_seqmerge {
	pthread_mutex_t lock;
	struct cb_seqset set;     /* under lock */
	uint64_t alloc_failures;  /* under lock */
};

#define CB_SEQSTAGE_LEN 4096

struct cb_seqstage {
	unsigned int n;
	struct {
		uint64_t seq;
		unsigned int stream;
	} e[CB_SEQSTAGE_LEN];
};

void cb_seqmerge_init(struct cb_seqmerge *m);
void cb_seqmerge_free(struct cb_seqmerge *m);

/* Add the staged numbers to the shared set and empty the stage. */
void cb_seqstage_flush(struct cb_seqstage *s, struct cb_seqmerge *m);

static inline void cb_seqstage_add(struct cb_seqstage *s, struct cb_seqmerge *m, unsigned int stream,
				   uint64_t seq)
{
	s->e[s->n].seq = seq;
	s->e[s->n].stream = stream;
	if (++s->n == CB_SEQSTAGE_LEN)
		cb_seqstage_flush(s, m);
}

/* A trailer frame (stamp.h) one worker received: recorded in the shared set
 * at once, under the lock (a stream sends a few). 0 or -ENOMEM. */
int cb_seqmerge_trailer(struct cb_seqmerge *m, unsigned int stream, uint64_t last_seq,
			uint64_t sent);

/* Totals over the union, once every worker has flushed: unique, lost,
 * too_old, max_seq and streams of the shared set; duplicates are the
 * workers' own plus those between workers; reordered is the sum of what
 * each worker saw on its own socket. `workers` are the n workers' sets. */
void cb_seqmerge_totals(const struct cb_seqmerge *m, const struct cb_seqset *const *workers,
			unsigned int n, struct cb_seqtotals *out);

#endif
