/* SPDX-License-Identifier: MIT */
/*
 * The sequence tracker: from the sequence numbers a counter sees, how many
 * distinct frames arrived, how many are missing, seen twice or late.
 *
 * One tracker per stream (generator thread). It keeps the highest sequence
 * number seen and a bitmap of the last CB_SEQ_WINDOW numbers below it, so a
 * late frame can be told from a duplicate:
 *
 *   seq >= next            in order (a jump leaves a gap: those are missing
 *                          until they arrive late)
 *   seq in the window      late: "reordered" the first time, a duplicate after
 *   seq below the window   too late to tell: counted as reordered and unique
 *                          ("too_old" says how many were judged that way)
 *
 * lost = next - unique: every sequence number below the highest one seen that
 * never arrived, a lost first frame (seq 0) included. A lost last frame leaves
 * no trace in the numbers; cb_seqtrack_lost() counts it when told how many
 * frames were sent, and a stream's trailer frame (stamp.h) tells it: once a
 * trailer arrived, the stream's lost counts up to the sent count it carries.
 */
#ifndef CAPBENCH_SEQTRACK_H
#define CAPBENCH_SEQTRACK_H

#include <stdint.h>

#define CB_SEQ_WINDOW (1u << 16) /* sequence numbers remembered below the highest */
#define CB_SEQ_STREAMS 256       /* stream ids are one byte (stamp.h) */

/* What a stream's trailer frames said. */
struct cb_trailer {
	uint64_t seen;       /* trailer frames received; 0 = none arrived */
	uint64_t sent;       /* the stream's sent count, as the last trailer carried it */
	uint64_t last_seq;   /* its last sequence number (meaningful when sent > 0) */
};

struct cb_seqtrack {
	uint64_t next;       /* highest sequence number seen + 1; 0 = none yet */
	uint64_t unique;     /* distinct sequence numbers seen */
	uint64_t duplicates;
	uint64_t reordered;  /* arrived after a higher sequence number */
	uint64_t too_old;    /* of those, below the window: assumed unique */
	struct cb_trailer trailer;
	uint64_t seen[CB_SEQ_WINDOW / 64]; /* bit seq % WINDOW, for seq in [next-WINDOW, next) */
};

void cb_seqtrack_init(struct cb_seqtrack *t);
/* Record one frame; returns 1 if its sequence number is new, 0 for a duplicate. */
int cb_seqtrack_add(struct cb_seqtrack *t, uint64_t seq);
/* Frames missing: below the highest seen, or below `sent` when sent > 0. */
uint64_t cb_seqtrack_lost(const struct cb_seqtrack *t, uint64_t sent);
/* Frames missing as far as the stream's frames tell: below its trailer's
 * sent count once a trailer arrived, else below the highest seen. */
uint64_t cb_seqtrack_lost_tail(const struct cb_seqtrack *t);
/* A trailer frame of this stream arrived, carrying last_seq and sent. */
void cb_seqtrack_trailer(struct cb_seqtrack *t, uint64_t last_seq, uint64_t sent);

/* Trackers for every stream, allocated when a stream is first seen. */
struct cb_seqset {
	struct cb_seqtrack *stream[CB_SEQ_STREAMS];
};

struct cb_seqtotals {
	uint64_t unique, duplicates, reordered, too_old, lost, max_seq, streams;
	/* Trailers: frames seen, streams whose trailer arrived, the sum of the
	 * sent counts they carry, the highest last sequence number. */
	uint64_t trailer_seen, trailer_streams, trailer_sent, trailer_last_seq;
};

/* Record one frame of `stream`; returns 1 if new, 0 for a duplicate, -ENOMEM. */
int cb_seqset_add(struct cb_seqset *s, unsigned int stream, uint64_t seq);
/* Record a trailer frame of `stream` (its tracker is made if no frame of it
 * arrived: then all it sent is lost); 0 or -ENOMEM. */
int cb_seqset_trailer(struct cb_seqset *s, unsigned int stream, uint64_t last_seq, uint64_t sent);
/* Sums over all streams (max_seq: the highest of any stream); lost counts
 * the tail of the streams whose trailer arrived (cb_seqtrack_lost_tail). */
void cb_seqset_totals(const struct cb_seqset *s, struct cb_seqtotals *out);
void cb_seqset_free(struct cb_seqset *s);

#endif
