/* SPDX-License-Identifier: MIT */
/* Unit tests: CPU lists (--worker-cpus). */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_and_lists),
		cmocka_unit_test(test_not_a_list),
		cmocka_unit_test(test_a_cpu_twice),
		cmocka_unit_test(test_out_of_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
