/* SPDX-License-Identifier: MIT */
/* capbench-gen --describe: one valid JSON document with every engine, every
 * option of the tables and every --size profile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "gen.h"
#include "json_check.h"

static void test_describe(void **state)
{
	static char text[65536];
	FILE *f = fmemopen(text, sizeof(text), "w");
	char want[96];

	assert_non_null(f);
	assert_int_equal(gen_describe(f), 0);
	fclose(f);
	assert_true(json_valid(text));
	assert_non_null(strstr(text, "{\"program\":\"capbench-gen\",\"describe_version\":1,"));
	for (const struct gen_engine *const *e = gen_engines; *e; e++) {
		snprintf(want, sizeof(want), "{\"name\":\"%s\",\"summary\":", (*e)->name);
		assert_non_null(strstr(text, want));
		for (const struct cb_opt *o = (*e)->options; o && o->name; o++) {
			snprintf(want, sizeof(want), "\"name\":\"--%s\"", o->name);
			assert_non_null(strstr(text, want));
		}
	}
	for (const struct cb_size_form *s = cb_size_forms; s->name; s++) {
		snprintf(want, sizeof(want), "{\"name\":\"%s\",\"forms\":[\"%s\"", s->name, s->forms[0]);
		assert_non_null(strstr(text, want));
	}
	assert_non_null(strstr(text, "\"default_engine\":\"xdp\"}"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
