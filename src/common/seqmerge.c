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
