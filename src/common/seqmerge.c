/* SPDX-License-Identifier: MIT */
#include "seqmerge.h"

#include <string.h>

void cb_seqmerge_init(struct cb_seqmerge *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->lock, NULL);
}

void cb_seqmerge_free(struct cb_seqmerge *m)
{
	cb_seqset_free(&m->set);
	pthread_mutex_destroy(&m->lock);
}

void cb_seqstage_flush(struct cb_seqstage *s, struct cb_seqmerge *m)
{
	pthread_mutex_lock(&m->lock);
	for (unsigned int i = 0; i < s->n; i++)
		if (cb_seqset_add(&m->set, s->e[i].stream, s->e[i].seq) < 0)
			m->alloc_failures++;
	pthread_mutex_unlock(&m->lock);
	s->n = 0;
}

int cb_seqmerge_trailer(struct cb_seqmerge *m, unsigned int stream, uint64_t last_seq,
			uint64_t sent)
{
	int err;

	pthread_mutex_lock(&m->lock);
	err = cb_seqset_trailer(&m->set, stream, last_seq, sent);
	pthread_mutex_unlock(&m->lock);
	return err;
}

void cb_seqmerge_totals(const struct cb_seqmerge *m, const struct cb_seqset *const *workers,
			unsigned int n, struct cb_seqtotals *out)
{
	struct cb_seqtotals w;

	cb_seqset_totals(&m->set, out);
	out->reordered = 0;
	for (unsigned int i = 0; i < n; i++) {
		cb_seqset_totals(workers[i], &w);
		out->duplicates += w.duplicates;
		out->reordered += w.reordered;
	}
}
