/* SPDX-License-Identifier: MIT */
/* Unit tests: the JSON Lines writer's arrays of objects and times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "jsonl.h"

static void render(struct cb_json *j, char *out, size_t len)
{
	FILE *f = fmemopen(out, len, "w");

	assert_non_null(f);
	assert_int_equal(cb_json_end(j, f), 0);
	fclose(f);
}

static void test_array_of_objects(void **state)
{
	struct cb_json j;
	char out[256];

	cb_json_begin(&j, "summary");
	cb_json_arr_begin(&j, "workers");
	for (int i = 0; i < 2; i++) {
		cb_json_elem_begin(&j);
		cb_json_u64(&j, "worker", (uint64_t)i);
		cb_json_i64(&j, "cpu", i - 1);
		cb_json_obj_end(&j);
	}
	cb_json_arr_end(&j);
	cb_json_u64(&j, "after", 7);
	render(&j, out, sizeof(out));
	assert_string_equal(out, "{\"type\":\"summary\",\"workers\":[{\"worker\":0,\"cpu\":-1},"
				 "{\"worker\":1,\"cpu\":0}],\"after\":7}\n");
}

static void test_empty_array(void **state)
{
	struct cb_json j;
	char out[128];

	cb_json_begin(&j, "x");
	cb_json_arr_begin(&j, "a");
	cb_json_arr_end(&j);
	render(&j, out, sizeof(out));
	assert_string_equal(out, "{\"type\":\"x\",\"a\":[]}\n");
}

static void test_array_of_numbers(void **state)
{
	struct cb_json j;
	char out[128];

	cb_json_begin(&j, "ready");
	cb_json_arr_begin(&j, "worker_cpus");
	cb_json_arr_i64(&j, 1);
	cb_json_arr_i64(&j, -1);
	cb_json_arr_end(&j);
	cb_json_u64(&j, "n", 2);
	render(&j, out, sizeof(out));
	assert_string_equal(out, "{\"type\":\"ready\",\"worker_cpus\":[1,-1],\"n\":2}\n");
}

/* Epoch times as seconds with exactly three decimals, rounded to the ms. */
static void test_epoch_ms(void **state)
{
	struct cb_json j;
	char out[128];

	cb_json_begin(&j, "interval");
	cb_json_epoch_ms(&j, "at", 1764158400250000000ull);
	cb_json_epoch_ms(&j, "b", 1764158400999600000ull);
	cb_json_epoch_ms(&j, "c", 7000000ull);
	render(&j, out, sizeof(out));
	assert_string_equal(out, "{\"type\":\"interval\",\"at\":1764158400.250,"
				 "\"b\":1764158401.000,\"c\":0.007}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_array_of_objects),
		cmocka_unit_test(test_epoch_ms),
		cmocka_unit_test(test_empty_array),
		cmocka_unit_test(test_array_of_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
