/* SPDX-License-Identifier: MIT */
/*
 * The lines a live capture (cap.c) and an offline decode (cap_read.c) print
 * alike: interval lines, and the summary's counts, sequence and receive
 * fields. Each kind of line says where its numbers came from around these
 * (the backend and its kernel counters, or the file).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cap.h"
#include "util.h"

void cap_totals_merge(const struct cap_cfg *cfg, const struct cap_worker *const *ws, unsigned int n,
		      const struct cb_seqmerge *merge, struct cap_totals *m)
{
	const struct cb_seqset *sets[CAP_MAX_WORKERS];

	memset(m, 0, sizeof(*m));
	if (cap_rx_stats_init(&m->rx))
		cb_fatal("out of memory");
	for (unsigned int i = 0; i < n; i++) {
		const struct cap_worker *w = ws[i];

		cap_rx_stats_merge(&m->rx, &w->rx);
		m->packets += w->packets;
		m->bytes += w->bytes;
		m->foreign += w->foreign;
		m->trailers += w->trailers;
		m->received += w->received;
		m->alloc_failures += w->alloc_failures;
		if (!m->err)
			m->err = w->err;
		m->drain_cut |= w->drain_cut;
		sets[i] = &w->seq;
	}
	if (!merge) {
		cb_seqset_totals(&ws[0]->seq, &m->seq);
		return;
	}
	cb_seqmerge_totals(merge, sets, n, &m->seq);
	m->alloc_failures += merge->alloc_failures;
	/* --app-load none reads no stamps: then the sum is all there is. */
	if (cfg->load.kind != APP_LOAD_NONE)
		m->received = m->seq.unique;
}

void cap_totals_free(struct cap_totals *m)
{
	cap_rx_stats_free(&m->rx);
}

void cap_print_interval(FILE *out, uint64_t at_ns, double t_s, double dt_s,
			const struct cap_published *now, struct cap_published *prev)
{
	struct cb_json j;

	cb_json_begin(&j, "interval");
	cb_json_epoch_ms(&j, "at", at_ns);
	cb_json_double(&j, "t_s", t_s);
	cb_json_u64(&j, "packets", now->packets);
	cb_json_u64(&j, "received", now->received);
	cb_json_double(&j, "pps", (double)(now->packets - prev->packets) / dt_s);
	cb_json_double(&j, "rx_pps", (double)(now->received - prev->received) / dt_s);
	/* Bits per second of frame data (no preamble, gap or FCS). */
	cb_json_double(&j, "bps", (double)(now->bytes - prev->bytes) * 8.0 / dt_s);
	cb_json_end(&j, out);
	*prev = *now;
}

/* What trailer frames said (stamp.h): how many arrived, the sent count and
 * last sequence number they carry; `streams` >= 0: of how many streams. */
static void put_trailer(struct cb_json *j, uint64_t seen, uint64_t sent, uint64_t last_seq,
			int64_t streams)
{
	cb_json_obj_begin(j, "trailer");
	cb_json_u64(j, "seen", seen);
	if (streams >= 0)
		cb_json_u64(j, "streams", (uint64_t)streams);
	if (seen) {
		cb_json_u64(j, "sent", sent);
		cb_json_u64(j, "last_seq", last_seq);
	}
	cb_json_obj_end(j);
}

/* Each generator stream's own counts (one per generator thread). */
static void put_streams(struct cb_json *j, const struct cb_seqset *s)
{
	char key[8];

	cb_json_obj_begin(j, "per_stream");
	for (unsigned int i = 0; i < CB_SEQ_STREAMS; i++) {
		const struct cb_seqtrack *t = s->stream[i];

		if (!t)
			continue;
		snprintf(key, sizeof(key), "%u", i);
		cb_json_obj_begin(j, key);
		cb_json_u64(j, "received", t->unique);
		cb_json_u64(j, "lost", cb_seqtrack_lost_tail(t));
		cb_json_u64(j, "duplicates", t->duplicates);
		cb_json_u64(j, "reordered", t->reordered);
		cb_json_u64(j, "max_seq", t->next ? t->next - 1 : 0);
		if (t->trailer.seen)
			put_trailer(j, t->trailer.seen, t->trailer.sent, t->trailer.last_seq, -1);
		cb_json_obj_end(j);
	}
	cb_json_obj_end(j);
}

void cap_put_counts(struct cb_json *j, const struct cap_totals *m, int stamps_read,
		    int kernel_counter)
{
	cb_json_u64(j, "packets", m->packets);
	cb_json_u64(j, "bytes", m->bytes);
	cb_json_u64(j, "received", m->received);
	/* --app-load none reads no stamp: every frame is "received", and nothing is
	 * known of foreign frames or sequence numbers, so those fields are left out
	 * rather than printed as zeros nobody counted. */
	cb_json_bool(j, "stamps_read", stamps_read);
	if (stamps_read)
		cb_json_u64(j, "foreign", m->foreign);
	/* A kernel counter (xdp) counts trailer frames but keeps no sequence
	 * numbers of its own to count a tail with. */
	if (kernel_counter) {
		cb_json_obj_begin(j, "trailer");
		cb_json_u64(j, "seen", m->trailers);
		cb_json_obj_end(j);
		return;
	}
	if (!stamps_read)
		return;
	cb_json_u64(j, "lost", m->seq.lost);
	/* lost counts a stream's lost tail only once its trailer arrived:
	 * say whether every stream's did. */
	cb_json_bool(j, "tail_loss_counted", m->seq.streams && m->seq.trailer_streams == m->seq.streams);
	put_trailer(j, m->seq.trailer_seen, m->seq.trailer_sent, m->seq.trailer_last_seq,
		    (int64_t)m->seq.trailer_streams);
	cb_json_u64(j, "duplicates", m->seq.duplicates);
	cb_json_u64(j, "reordered", m->seq.reordered);
	cb_json_u64(j, "too_old", m->seq.too_old);
	cb_json_u64(j, "max_seq", m->seq.max_seq);
	cb_json_u64(j, "streams", m->seq.streams);
}

void cap_put_rx(struct cb_json *j, const struct cap_cfg *cfg, const struct cap_totals *m,
		const struct cb_seqset *one, const char *rx_clock)
{
	cb_json_str(j, "rx_clock", rx_clock);
	cap_rx_stats_json(&m->rx, j, cfg->group_size, cfg->groups);
	if (one)
		put_streams(j, one);
}
