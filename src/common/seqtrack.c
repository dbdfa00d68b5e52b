/* SPDX-License-Identifier: MIT */
#include "seqtrack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void cb_seqtrack_init(struct cb_seqtrack *t)
{
	memset(t, 0, sizeof(*t));
}

static inline void bit_set(struct cb_seqtrack *t, uint64_t seq)
{
	uint64_t i = seq % CB_SEQ_WINDOW;

	t->seen[i / 64] |= 1ull << (i % 64);
}

static inline int bit_test(const struct cb_seqtrack *t, uint64_t seq)
{
	uint64_t i = seq % CB_SEQ_WINDOW;

	return (t->seen[i / 64] >> (i % 64)) & 1;
}

/* Mark [lo, hi) as not seen; those bits still hold numbers a window older. */
static void clear_range(struct cb_seqtrack *t, uint64_t lo, uint64_t hi)
{
	if (hi - lo >= CB_SEQ_WINDOW) {
		memset(t->seen, 0, sizeof(t->seen));
		return;
	}
	for (; lo < hi && lo % 64; lo++)
		t->seen[(lo % CB_SEQ_WINDOW) / 64] &= ~(1ull << (lo % 64));
	for (; lo + 64 <= hi; lo += 64)
		t->seen[(lo % CB_SEQ_WINDOW) / 64] = 0;
	for (; lo < hi; lo++)
		t->seen[(lo % CB_SEQ_WINDOW) / 64] &= ~(1ull << (lo % 64));
}

int cb_seqtrack_add(struct cb_seqtrack *t, uint64_t seq)
{
	if (seq >= t->next) {
		/* The common case is seq == next: nothing to clear. */
		if (seq > t->next)
			clear_range(t, t->next, seq);
		bit_set(t, seq);
		t->next = seq + 1;
		t->unique++;
		return 1;
	}
	if (t->next - seq > CB_SEQ_WINDOW) {
		t->reordered++;
		t->too_old++;
		t->unique++;
		return 1;
	}
	if (bit_test(t, seq)) {
		t->duplicates++;
		return 0;
	}
	bit_set(t, seq);
	t->reordered++;
	t->unique++;
	return 1;
}

uint64_t cb_seqtrack_lost(const struct cb_seqtrack *t, uint64_t sent)
{
	uint64_t expected = sent > t->next ? sent : t->next;

	/* A frame judged unique below the window may in truth have been a
	 * duplicate; never report a negative loss for it. */
	return expected > t->unique ? expected - t->unique : 0;
}

uint64_t cb_seqtrack_lost_tail(const struct cb_seqtrack *t)
{
	return cb_seqtrack_lost(t, t->trailer.seen ? t->trailer.sent : 0);
}

void cb_seqtrack_trailer(struct cb_seqtrack *t, uint64_t last_seq, uint64_t sent)
{
	t->trailer.seen++;
	t->trailer.sent = sent;
	t->trailer.last_seq = last_seq;
}

static struct cb_seqtrack *stream_tracker(struct cb_seqset *s, unsigned int stream)
{
	struct cb_seqtrack *t = s->stream[stream % CB_SEQ_STREAMS];

	if (__builtin_expect(!t, 0)) {
		t = malloc(sizeof(*t));
		if (!t)
			return NULL;
		cb_seqtrack_init(t);
		s->stream[stream % CB_SEQ_STREAMS] = t;
	}
	return t;
}

int cb_seqset_add(struct cb_seqset *s, unsigned int stream, uint64_t seq)
{
	struct cb_seqtrack *t = stream_tracker(s, stream);

	return t ? cb_seqtrack_add(t, seq) : -ENOMEM;
}

int cb_seqset_trailer(struct cb_seqset *s, unsigned int stream, uint64_t last_seq, uint64_t sent)
{
	struct cb_seqtrack *t = stream_tracker(s, stream);

	if (!t)
		return -ENOMEM;
	cb_seqtrack_trailer(t, last_seq, sent);
	return 0;
}

void cb_seqset_totals(const struct cb_seqset *s, struct cb_seqtotals *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned int i = 0; i < CB_SEQ_STREAMS; i++) {
		const struct cb_seqtrack *t = s->stream[i];

		if (!t)
			continue;
		out->streams++;
		out->unique += t->unique;
		out->duplicates += t->duplicates;
		out->reordered += t->reordered;
		out->too_old += t->too_old;
		out->lost += cb_seqtrack_lost_tail(t);
		if (t->next && t->next - 1 > out->max_seq)
			out->max_seq = t->next - 1;
		if (t->trailer.seen) {
			out->trailer_seen += t->trailer.seen;
			out->trailer_streams++;
			out->trailer_sent += t->trailer.sent;
			if (t->trailer.last_seq > out->trailer_last_seq)
				out->trailer_last_seq = t->trailer.last_seq;
		}
	}
}

void cb_seqset_free(struct cb_seqset *s)
{
	for (unsigned int i = 0; i < CB_SEQ_STREAMS; i++) {
		free(s->stream[i]);
		s->stream[i] = NULL;
	}
}
