/* SPDX-License-Identifier: MIT */
/* Unit tests: merging the sequence numbers of several workers (fanout). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "seqmerge.h"

#define MAXW 4

struct rig {
	struct cb_seqmerge m;
	struct cb_seqset sets[MAXW];
	struct cb_seqstage *stages[MAXW];
	unsigned int n;
};

static struct rig *rig_new(unsigned int n)
{
	struct rig *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	cb_seqmerge_init(&r->m);
	r->n = n;
	for (unsigned int i = 0; i < n; i++) {
		r->stages[i] = calloc(1, sizeof(*r->stages[i]));
		assert_non_null(r->stages[i]);
	}
	return r;
}

static void rig_free(struct rig *r)
{
	for (unsigned int i = 0; i < r->n; i++) {
		cb_seqset_free(&r->sets[i]);
		free(r->stages[i]);
	}
	cb_seqmerge_free(&r->m);
	free(r);
}

/* What a worker does per frame (cap_packet): its own set first, and only a
 * number new to it goes to the stage. */
static void see(struct rig *r, unsigned int w, unsigned int stream, uint64_t seq)
{
	if (cb_seqset_add(&r->sets[w], stream, seq) > 0)
		cb_seqstage_add(r->stages[w], &r->m, stream, seq);
}

static void flush_all(struct rig *r)
{
	for (unsigned int i = 0; i < r->n; i++)
		cb_seqstage_flush(r->stages[i], &r->m);
}

static void totals(struct rig *r, struct cb_seqtotals *t)
{
	const struct cb_seqset *sets[MAXW];

	for (unsigned int i = 0; i < r->n; i++)
		sets[i] = &r->sets[i];
	cb_seqmerge_totals(&r->m, sets, r->n, t);
}

static void test_round_robin_split_is_exact(void **state)
{
	struct rig *r = rig_new(2);
	struct cb_seqtotals t;

	/* lb fanout: even numbers to worker 0, odd to worker 1; each worker
	 * alone sees every other number missing. */
	for (uint64_t s = 0; s < 100000; s++) {
		see(r, s % 2, 0, s);
		if (s % 1000 == 999)
			flush_all(r); /* batches end now and then */
	}
	flush_all(r);
	totals(r, &t);
	assert_int_equal(t.unique, 100000);
	assert_int_equal(t.lost, 0);
	assert_int_equal(t.duplicates, 0);
	assert_int_equal(t.reordered, 0); /* neither socket reordered anything */
	assert_int_equal(t.max_seq, 99999);
	assert_int_equal(t.streams, 1);
	rig_free(r);
}

static void test_flush_order_does_not_matter(void **state)
{
	struct rig *r = rig_new(2);
	struct cb_seqtotals t;

	/* Worker 1 flushes its whole half before worker 0 flushes anything,
	 * and the stages fill up (CB_SEQSTAGE_LEN) on the way. */
	for (uint64_t s = 1; s < 20000; s += 2)
		see(r, 1, 0, s);
	cb_seqstage_flush(r->stages[1], &r->m);
	for (uint64_t s = 0; s < 20000; s += 2)
		see(r, 0, 0, s);
	flush_all(r);
	totals(r, &t);
	assert_int_equal(t.unique, 20000);
	assert_int_equal(t.lost, 0);
	assert_int_equal(t.duplicates, 0);
	assert_int_equal(t.reordered, 0);
	rig_free(r);
}

static void test_a_frame_seen_by_two_workers_counts_once(void **state)
{
	struct rig *r = rig_new(3);
	struct cb_seqtotals t;

	for (uint64_t s = 0; s < 30; s++)
		see(r, s % 3, 0, s);
	see(r, 1, 0, 5);  /* 5 went to worker 2; worker 1 sees it too */
	see(r, 2, 0, 5);  /* and worker 2 twice: its own duplicate */
	see(r, 0, 0, 0);  /* 0 again at worker 0 */
	flush_all(r);
	totals(r, &t);
	assert_int_equal(t.unique, 30);
	assert_int_equal(t.duplicates, 3); /* one between workers, two within */
	assert_int_equal(t.lost, 0);
	rig_free(r);
}

static void test_losses_of_the_union(void **state)
{
	struct rig *r = rig_new(2);
	struct cb_seqtotals t;

	/* 0..99 sent; 10 and 11 lost (one each worker's), 50..59 lost. */
	for (uint64_t s = 0; s < 100; s++)
		if (s != 10 && s != 11 && !(s >= 50 && s < 60))
			see(r, s % 2, 0, s);
	flush_all(r);
	totals(r, &t);
	assert_int_equal(t.unique, 88);
	assert_int_equal(t.lost, 12);
	assert_int_equal(t.duplicates, 0);
	rig_free(r);
}

static void test_streams_and_reordering_per_socket(void **state)
{
	struct rig *r = rig_new(2);
	struct cb_seqtotals t;

	/* Two streams; stream 1 arrives at worker 1 with 3 and 2 swapped. */
	for (uint64_t s = 0; s < 10; s++)
		see(r, 0, 0, s);
	const uint64_t order[] = { 0, 1, 3, 2, 4 };
	for (size_t i = 0; i < 5; i++)
		see(r, 1, 1, order[i]);
	flush_all(r);
	totals(r, &t);
	assert_int_equal(t.streams, 2);
	assert_int_equal(t.unique, 15);
	assert_int_equal(t.reordered, 1);
	assert_int_equal(t.lost, 0);
	assert_int_equal(t.max_seq, 9);
	rig_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_robin_split_is_exact),
		cmocka_unit_test(test_flush_order_does_not_matter),
		cmocka_unit_test(test_a_frame_seen_by_two_workers_counts_once),
		cmocka_unit_test(test_losses_of_the_union),
		cmocka_unit_test(test_streams_and_reordering_per_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
