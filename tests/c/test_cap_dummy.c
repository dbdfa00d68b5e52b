/* SPDX-License-Identifier: MIT */
/*
 * Adding a backend takes its file, one registry line and one meson line:
 * this test is built with tests/c/backend_dummy.c and -DCAP_TEST_BACKEND=dummy
 * (the registry line, src/cap/backends.c) and nothing else, and finds the
 * dummy everywhere a backend is known: --describe, --help, the parse of its
 * option (with its own range) and the ownership checks of the others.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cap_run.h"

static struct run_result r;

static void test_describe_and_help_list_the_dummy(void **state)
{
	run_cap((const char *[]){ "--describe", NULL }, &r);
	assert_int_equal(r.status, 0);
	assert_true(json_valid(r.out));
	assert_non_null(strstr(r.out, "{\"name\":\"dummy\",\"summary\":\"a test backend"));
	assert_non_null(strstr(r.out, "\"help\":\"frames the dummy pretends to read per call\""));
	/* Its loss account, a layer of its own, with what explains it. */
	assert_non_null(strstr(r.out, "\"account\":[{\"layer\":\"dummy tray\",\"counter\":\"the dummy's "
			       "tray_spills\",\"explains\":\"the dummy's tray had no room"));
	run_cap((const char *[]){ "--help", NULL }, &r);
	assert_non_null(strstr(r.out, "--backend dummy: a test backend that captures nothing"));
}

static void test_its_option_parses_with_its_range(void **state)
{
	char *argv[] = { "capbench-cap", "--check", "--backend", "dummy", "--batch", "8", NULL };
	struct cap_cfg cfg;
	int check;

	optind = 0;
	assert_string_equal(cap_configure(6, argv, &cfg, &check)->name, "dummy");
	assert_int_equal(cfg.batch, 8);
	run_cap((const char *[]){ "--check", "--backend", "dummy", "--batch", "9", NULL }, &r);
	assert_int_equal(r.status, CB_EXIT_USAGE);
	assert_string_equal(r.err, "capbench-cap: bad --batch '9': give 1..8 dummy frames\n");
	/* Its owners now include the dummy; another backend's option is refused. */
	run_cap((const char *[]){ "--check", "--backend", "pcap", "--batch", "3", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: --batch is an option of --backend raw, afxdp, "
			    "dpdk and dummy, not of pcap\n");
	run_cap((const char *[]){ "--check", "--backend", "dummy", "--immediate", "--pcap-api", "next", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: --pcap-api and --immediate are options "
			    "of --backend pcap, not of dummy\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_describe_and_help_list_the_dummy),
		cmocka_unit_test(test_its_option_parses_with_its_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
