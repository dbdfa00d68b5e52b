/* SPDX-License-Identifier: MIT */
/* Unit tests: the sequence tracker (gaps, duplicates, reordering, lost
 * first and last frames, the window edge, several streams). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "seqtrack.h"

static struct cb_seqtrack *new_tracker(void)
{
	struct cb_seqtrack *t = malloc(sizeof(*t));

	assert_non_null(t);
	cb_seqtrack_init(t);
	return t;
}

static void feed(struct cb_seqtrack *t, const uint64_t *seqs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cb_seqtrack_add(t, seqs[i]);
}

static void test_in_order_nothing_lost(void **state)
{
	struct cb_seqtrack *t = new_tracker();

	for (uint64_t s = 0; s < 1000000; s++)
		assert_int_equal(cb_seqtrack_add(t, s), 1);
	assert_int_equal(t->unique, 1000000);
	assert_int_equal(cb_seqtrack_lost(t, 0), 0);
	assert_int_equal(cb_seqtrack_lost(t, 1000000), 0);
	assert_int_equal(t->duplicates + t->reordered + t->too_old, 0);
	free(t);
}

static void test_gaps_are_lost(void **state)
{
	struct cb_seqtrack *t = new_tracker();
	const uint64_t seqs[] = { 0, 1, 2, 5, 6, 10 }; /* 3,4,7,8,9 missing */

	feed(t, seqs, 6);
	assert_int_equal(t->unique, 6);
	assert_int_equal(cb_seqtrack_lost(t, 0), 5);
	assert_int_equal(t->reordered, 0);
	free(t);
}

static void test_lost_first_and_last(void **state)
{
	struct cb_seqtrack *t = new_tracker();

	/* 0 and 9 never arrive; 10 frames were sent. */
	for (uint64_t s = 1; s < 9; s++)
		cb_seqtrack_add(t, s);
	assert_int_equal(cb_seqtrack_lost(t, 0), 1);   /* the first one shows */
	assert_int_equal(cb_seqtrack_lost(t, 10), 2);  /* the last only with the count */
	free(t);
}

static void test_duplicates(void **state)
{
	struct cb_seqtrack *t = new_tracker();
	const uint64_t seqs[] = { 0, 1, 1, 2, 2, 2, 3 };

	feed(t, seqs, 7);
	assert_int_equal(t->unique, 4);
	assert_int_equal(t->duplicates, 3);
	assert_int_equal(t->reordered, 0);
	assert_int_equal(cb_seqtrack_lost(t, 4), 0);
	free(t);
}

static void test_reordered_fills_the_gap(void **state)
{
	struct cb_seqtrack *t = new_tracker();
	const uint64_t seqs[] = { 0, 2, 1, 3, 5, 4, 4 };

	feed(t, seqs, 7);
	assert_int_equal(t->unique, 6);
	assert_int_equal(t->reordered, 2);   /* 1 and 4 came late */
	assert_int_equal(t->duplicates, 1);  /* the second 4 */
	assert_int_equal(cb_seqtrack_lost(t, 0), 0);
	free(t);
}

static void test_late_duplicate_of_a_gap_after_a_jump(void **state)
{
	struct cb_seqtrack *t = new_tracker();

	/* Fill the window, then jump: the bits of the skipped numbers must
	 * read "not seen" even though a window earlier they were set. */
	for (uint64_t s = 0; s < CB_SEQ_WINDOW; s++)
		cb_seqtrack_add(t, s);
	cb_seqtrack_add(t, CB_SEQ_WINDOW + 100);
	assert_int_equal(cb_seqtrack_lost(t, 0), 100);
	assert_int_equal(cb_seqtrack_add(t, CB_SEQ_WINDOW + 50), 1); /* late, new */
	assert_int_equal(cb_seqtrack_add(t, CB_SEQ_WINDOW + 50), 0); /* duplicate */
	assert_int_equal(cb_seqtrack_lost(t, 0), 99);
	assert_int_equal(t->reordered, 1);
	assert_int_equal(t->duplicates, 1);
	free(t);
}

static void test_below_the_window(void **state)
{
	struct cb_seqtrack *t = new_tracker();

	cb_seqtrack_add(t, 0);
	cb_seqtrack_add(t, 3 * (uint64_t)CB_SEQ_WINDOW);       /* huge jump */
	assert_int_equal(cb_seqtrack_lost(t, 0), 3 * CB_SEQ_WINDOW - 1);
	assert_int_equal(cb_seqtrack_add(t, 5), 1);           /* too old to check */
	assert_int_equal(t->too_old, 1);
	assert_int_equal(t->reordered, 1);
	assert_int_equal(cb_seqtrack_lost(t, 0), 3 * CB_SEQ_WINDOW - 2);
	free(t);
}

static void test_streams_are_separate(void **state)
{
	struct cb_seqset s = { 0 };
	struct cb_seqtotals tot;

	/* Stream 0 complete, stream 7 misses seq 1; the same numbers in two
	 * streams are not duplicates. */
	for (uint64_t q = 0; q < 4; q++) {
		assert_int_equal(cb_seqset_add(&s, 0, q), 1);
		if (q != 1)
			assert_int_equal(cb_seqset_add(&s, 7, q), 1);
	}
	cb_seqset_totals(&s, &tot);
	assert_int_equal(tot.streams, 2);
	assert_int_equal(tot.unique, 7);
	assert_int_equal(tot.lost, 1);
	assert_int_equal(tot.duplicates, 0);
	assert_int_equal(tot.max_seq, 3);
	cb_seqset_free(&s);
}

/* The last 10 of 100 frames lost: only a trailer shows them. */
static void test_trailer_counts_the_tail(void **state)
{
	struct cb_seqset s = { 0 };
	struct cb_seqtotals tot;

	for (uint64_t q = 0; q < 90; q++)
		cb_seqset_add(&s, 0, q);
	cb_seqset_totals(&s, &tot);
	assert_int_equal(tot.lost, 0);
	assert_int_equal(tot.trailer_streams, 0);
	assert_int_equal(cb_seqset_trailer(&s, 0, 99, 100), 0);
	assert_int_equal(cb_seqset_trailer(&s, 0, 99, 100), 0);
	cb_seqset_totals(&s, &tot);
	assert_int_equal(tot.lost, 10);
	assert_int_equal(tot.unique, 90);
	assert_int_equal(tot.trailer_seen, 2);
	assert_int_equal(tot.trailer_streams, 1);
	assert_int_equal(tot.trailer_sent, 100);
	assert_int_equal(tot.trailer_last_seq, 99);
	assert_int_equal(tot.max_seq, 89);
	/* A stream of which only the trailer arrived lost all it sent. */
	cb_seqset_trailer(&s, 5, 49, 50);
	cb_seqset_totals(&s, &tot);
	assert_int_equal(tot.streams, 2);
	assert_int_equal(tot.lost, 60);
	/* A stream that sent nothing: its trailer says 0, nothing lost. */
	cb_seqset_trailer(&s, 6, 0, 0);
	cb_seqset_totals(&s, &tot);
	assert_int_equal(tot.lost, 60);
	assert_int_equal(tot.trailer_streams, 3);
	cb_seqset_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_nothing_lost),
		cmocka_unit_test(test_gaps_are_lost),
		cmocka_unit_test(test_lost_first_and_last),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_reordered_fills_the_gap),
		cmocka_unit_test(test_late_duplicate_of_a_gap_after_a_jump),
		cmocka_unit_test(test_below_the_window),
		cmocka_unit_test(test_streams_are_separate),
		cmocka_unit_test(test_trailer_counts_the_tail),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
