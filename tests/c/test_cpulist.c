/* SPDX-License-Identifier: MIT */
/* Unit tests of util.c: CPU lists (--worker-cpus) and the wall-clock
 * interval ticks (cb_tick_*). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util.h"

static void expect_list(const char *s, int ncpu, const int *want, int n)
{
	int got[64];

	assert_int_equal(cb_parse_cpu_list(s, ncpu, got, 64), n);
	for (int i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
}

static void test_single_and_lists(void **state)
{
	expect_list("0", 2, (const int[]){ 0 }, 1);
	expect_list("1,0", 2, (const int[]){ 1, 0 }, 2);
	expect_list("0-3", 8, (const int[]){ 0, 1, 2, 3 }, 4);
	expect_list("6,0-2,4", 8, (const int[]){ 6, 0, 1, 2, 4 }, 5);
	expect_list("5-5", 8, (const int[]){ 5 }, 1);
	expect_list("17", 64, (const int[]){ 17 }, 1);
}

static void test_not_a_list(void **state)
{
	int out[8];
	const char *bad[] = { "", "x", "1,", ",1", "1,,2", "1-", "-1", "1-2-3", "3-1", " 1",
			      "1 ", "+1", "1.0", "0x1", "1;2" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(cb_parse_cpu_list(bad[i], 8, out, 8), -EINVAL);
	assert_int_equal(cb_parse_cpu_list(NULL, 8, out, 8), -EINVAL);
}

static void test_a_cpu_twice(void **state)
{
	int out[8];

	assert_int_equal(cb_parse_cpu_list("1,1", 4, out, 8), -EINVAL);
	assert_int_equal(cb_parse_cpu_list("0-2,2", 4, out, 8), -EINVAL);
}

static void test_out_of_range(void **state)
{
	int out[4];

	assert_int_equal(cb_parse_cpu_list("2", 2, out, 4), -ERANGE);
	assert_int_equal(cb_parse_cpu_list("0-2", 2, out, 4), -ERANGE);
	assert_int_equal(cb_parse_cpu_list("99999999999999999999", 2, out, 4), -ERANGE);
	/* more CPUs than room */
	assert_int_equal(cb_parse_cpu_list("0-4", 8, out, 4), -ERANGE);
	assert_int_equal(cb_parse_cpu_list("0-3", 8, out, 4), 4);
}

#define S 1000000000ull
#define MS 1000000ull

/* The first tick: the next whole multiple of the interval of the wall
 * clock, unless closer than half an interval. */
static void test_tick_first(void **state)
{
	uint64_t t0 = 1764158400ull * S; /* a whole second */

	assert_int_equal(cb_tick_first(t0 + 300 * MS, S), t0 + S);        /* 0.7 s away */
	assert_int_equal(cb_tick_first(t0 + 500 * MS, S), t0 + S);        /* exactly half */
	assert_int_equal(cb_tick_first(t0 + 600 * MS, S), t0 + 2 * S);    /* 0.4 s: skipped */
	assert_int_equal(cb_tick_first(t0, S), t0 + S);                   /* on a tick: the next */
	assert_int_equal(cb_tick_first(t0 + 999 * MS, S), t0 + 2 * S);
	/* 250 ms: multiples of 250 ms since the epoch. */
	assert_int_equal(cb_tick_first(t0 + 10 * MS, 250 * MS), t0 + 250 * MS);
	assert_int_equal(cb_tick_first(t0 + 200 * MS, 250 * MS), t0 + 500 * MS);
}

/* Wake-ups on the monotonic clock at the wall ticks' instants; each take
 * gives the tick's wall time and moves on by one interval. */
static void test_tick_sequence(void **state)
{
	struct cb_tick t;
	uint64_t wall = 1764158400ull * S + 300 * MS, mono = 5 * S + 7;

	cb_tick_init(&t, 1.0, mono, wall);
	assert_int_equal(t.wall_ns, 1764158401ull * S);
	assert_int_equal(t.mono_ns, mono + 700 * MS);
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t now = t.mono_ns + 2 * MS; /* woken a little late */

		assert_int_equal(cb_tick_take(&t, now), (1764158401ull + i) * S);
		assert_int_equal(t.mono_ns, mono + 700 * MS + (i + 1) * S);
	}
}

/* A caller late by more than an interval gets the latest tick it passed,
 * not the missed ones back to back. */
static void test_tick_late(void **state)
{
	struct cb_tick t;

	cb_tick_init(&t, 0.5, 0, 100 * S);
	assert_int_equal(t.wall_ns, 100 * S + 500 * MS);
	assert_int_equal(t.mono_ns, 500 * MS);
	/* Woken at 2.2 s: the ticks at 0.5, 1.0, 1.5 and 2.0 s have passed. */
	assert_int_equal(cb_tick_take(&t, 2200 * MS), 102 * S);
	assert_int_equal(t.wall_ns, 102 * S + 500 * MS);
	assert_int_equal(t.mono_ns, 2500 * MS);
}

/* Two programs started 0.4 s apart, with different monotonic clocks (two
 * hosts): from their second tick on they tell the same instants. */
static void test_tick_two_starts(void **state)
{
	struct cb_tick a, b;
	uint64_t wall = 1764158400ull * S + 100 * MS;

	cb_tick_init(&a, 1.0, 10 * S, wall);
	cb_tick_init(&b, 1.0, 777 * S, wall + 400 * MS);
	assert_int_equal(a.wall_ns, b.wall_ns);
	assert_int_equal(a.mono_ns - 10 * S, 900 * MS);
	assert_int_equal(b.mono_ns - 777 * S, 500 * MS);
	assert_int_equal(cb_tick_take(&a, a.mono_ns), cb_tick_take(&b, b.mono_ns));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_and_lists),
		cmocka_unit_test(test_not_a_list),
		cmocka_unit_test(test_a_cpu_twice),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_tick_first),
		cmocka_unit_test(test_tick_sequence),
		cmocka_unit_test(test_tick_late),
		cmocka_unit_test(test_tick_two_starts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
