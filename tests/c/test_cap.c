/* SPDX-License-Identifier: MIT */
/* Unit tests of src/cap: the histogram quantiles, the rings' geometry, the
 * option tables (ownership, defaults, --help) and --describe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cap_run.h"
#include "rx_stats.h"

/* --- histogram ---------------------------------------------------------- */

static struct cap_hist h;

static void test_quantile_small_values_are_exact(void **state)
{
	memset(&h, 0, sizeof(h));
	for (uint64_t v = 0; v < 32; v++)
		cap_hist_add(&h, v);
	assert_int_equal(cap_hist_quantile(&h, 0.5), 16);
	assert_int_equal(cap_hist_quantile(&h, 0.0), 0);
	assert_int_equal(cap_hist_quantile(&h, 1.0), 31);
}

/* A quantile is the middle of its bucket, not its lower bound: 992..1007
 * share one bucket (16 values wide at 2^9), whose middle is 999. */
static void test_quantile_is_the_bucket_midpoint(void **state)
{
	memset(&h, 0, sizeof(h));
	cap_hist_add(&h, 10);
	for (uint64_t v = 992; v <= 1007; v++)
		cap_hist_add(&h, v);
	cap_hist_add(&h, 100000);
	assert_int_equal(cap_hist_index(992), cap_hist_index(1007));
	assert_int_not_equal(cap_hist_index(991), cap_hist_index(992));
	assert_int_equal(cap_hist_quantile(&h, 0.5), 999);
	assert_int_equal(cap_hist_quantile(&h, 0), 10);
	assert_int_equal(cap_hist_quantile(&h, 1), 100000);
}

/* Over the whole range: the quantile of a value lies in the value's own
 * bucket, within 1.6 % of it (half a bucket), and within min..max. */
static void test_quantile_error_is_half_a_bucket(void **state)
{
	for (uint64_t v = 33; v < (1ull << 50); v = v * 17 / 16 + 1) {
		uint64_t q;

		memset(&h, 0, sizeof(h));
		cap_hist_add(&h, 1);
		cap_hist_add(&h, v);
		cap_hist_add(&h, v);
		cap_hist_add(&h, 1ull << 52);
		q = cap_hist_quantile(&h, 0.5);
		assert_int_equal(cap_hist_index(q), cap_hist_index(v));
		assert_true((double)(q > v ? q - v : v - q) <= 0.016 * (double)v);
	}
	/* A lone sample: the quantile is the sample itself (min and max bound it). */
	memset(&h, 0, sizeof(h));
	cap_hist_add(&h, 123456789);
	assert_int_equal(cap_hist_quantile(&h, 0.5), 123456789);
}

/* --- ring geometry ------------------------------------------------------- */

static const struct cap_backend *backend(const char *name)
{
	const struct cap_backend *b = cap_backend_find(name);

	assert_non_null(b);
	return b;
}

static uint64_t ring(const char *name, const struct cap_cfg *cfg)
{
	char what[128];
	unsigned int sockets;

	return backend(name)->ring_bytes(cfg, &sockets, what, sizeof(what)) * sockets;
}

static void test_ring_bytes(void **state)
{
	struct cap_cfg cfg = { .workers = 1, .n_queues = 1 };
	long page = sysconf(_SC_PAGESIZE);

	/* afp-v2: 4096 frames of 2048 B, two to a 4 KiB block: 8 MiB. */
	if (page == 4096)
		assert_int_equal(ring("afp-v2", &cfg), 8u << 20);
	/* A 3000 B frame takes a whole 4 KiB block of its own. */
	cfg.frame_size = 3008;
	if (page == 4096)
		assert_int_equal(ring("afp-v2", &cfg), 4096ull * 4096);
	/* Frames are rounded up to whole blocks. */
	cfg.frame_size = 2048;
	cfg.frame_count = 3;
	if (page == 4096)
		assert_int_equal(ring("afp-v2", &cfg), 2 * 4096);
	/* afp-v3: 32 blocks of 1 MiB by default; fanout one ring per worker. */
	assert_int_equal(ring("afp-v3", &cfg), 32u << 20);
	cfg.block_size = 65536;
	cfg.block_count = 4;
	assert_int_equal(ring("afp-v3", &cfg), 4 * 65536);
	cfg.workers = 3;
	assert_int_equal(ring("fanout", &cfg), 3 * 4 * 65536);
	/* afxdp: a UMEM of --frame-count (by default --ring-size) 2 KiB frames
	 * per queue. */
	cfg.frame_count = 0;
	assert_int_equal(ring("afxdp", &cfg), 16384ull * 2048);
	cfg.ring_size = 1024;
	cfg.n_queues = 2;
	assert_int_equal(ring("afxdp", &cfg), 2 * 1024 * 2048);
	cfg.frame_count = 4096;
	assert_int_equal(ring("afxdp", &cfg), 2 * 4096 * 2048);
	/* A socket's buffer: raw's SO_RCVBUF (64 MiB), libpcap's (2 MiB). */
	assert_int_equal(ring("raw", &cfg), 64u << 20);
	cfg.buffer_size = 4u << 20;
	assert_int_equal(ring("pcap", &cfg), 4u << 20);
	cfg.buffer_size = 0;
	assert_int_equal(ring("pcap", &cfg), 2u << 20);
	/* A backend without a buffer of its own. */
	assert_null(backend("xdp")->ring_bytes);
}

/* --- option tables ------------------------------------------------------- */

static int odd_refused(uint64_t v)
{
	return v % 2;
}

/* A tunable row's candidates: the powers of two of its tune range that the
 * row itself takes (its min..max and its own rule). */
static void test_candidates(void **state)
{
	const struct cb_opt *size = cb_opt_find(backend("afp-v3")->options, "block-size");
	const struct cb_opt *workers = cb_opt_find(backend("fanout")->options, "workers");
	const struct cb_opt *timeout = cb_opt_find(backend("afp-v3")->options, "block-timeout");
	struct cb_opt row = { .name = "n", .type = CB_OPT_COUNT, .min = 3, .max = 40, .tunable = 1 };
	uint64_t v[64];
	unsigned int n;

	(void)state;
	n = cb_opt_candidates(size, v, 64);
	assert_int_equal(n, 7);
	assert_int_equal(v[0], 64u << 10);
	for (unsigned int i = 1; i < n; i++)
		assert_int_equal(v[i], 2 * v[i - 1]);
	assert_int_equal(v[n - 1], 4u << 20);
	n = cb_opt_candidates(workers, v, 64);
	assert_int_equal(n, 3);
	assert_int_equal(v[2], 4);
	/* Not tunable: none. */
	assert_int_equal(cb_opt_candidates(timeout, v, 64), 0);
	/* Without a tune range: the powers of two inside min..max. */
	n = cb_opt_candidates(&row, v, 64);
	assert_int_equal(n, 4);
	assert_int_equal(v[0], 4);
	assert_int_equal(v[3], 32);
	assert_int_equal(cb_opt_candidates(&row, v, 2), 2);
	/* A rule of its own leaves out what the row refuses. */
	row.valid = odd_refused;
	row.min = 1;
	n = cb_opt_candidates(&row, v, 64);
	assert_int_equal(n, 5);
	assert_int_equal(v[0], 2);
}

static struct run_result r;

/* Every option of another backend is refused, naming all of its owners. */
static void test_options_of_other_backends_are_refused(void **state)
{
	for (int i = 0; cap_backends[i]; i++) {
		for (int k = 0; cap_backends[k]; k++) {
			for (const struct cb_opt *o = cap_backends[k]->options; o && o->name; o++) {
				char flag[64], want[128];
				const char *args[] = { "--check", "--backend", cap_backends[i]->name,
						       flag, "1", NULL };

				if (cb_opt_find(cap_backends[i]->options, o->name))
					continue;
				snprintf(flag, sizeof(flag), "--%s", o->name);
				if (o->type == CB_OPT_FLAG)
					args[4] = NULL;
				run_cap(args, &r);
				assert_int_equal(r.status, CB_EXIT_USAGE);
				snprintf(want, sizeof(want), "of --backend ");
				assert_non_null(strstr(r.err, want));
				snprintf(want, sizeof(want), ", not of %s\n", cap_backends[i]->name);
				assert_non_null(strstr(r.err, want));
				assert_non_null(strstr(r.err, flag));
				for (int m = 0; cap_backends[m]; m++)
					if (cb_opt_find(cap_backends[m]->options, o->name))
						assert_non_null(strstr(r.err, cap_backends[m]->name));
				assert_ptr_equal(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
			}
		}
	}
	run_cap((const char *[]){ "--check", "--backend", "pcap", "--batch", "3", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: --batch is an option of --backend raw, afxdp and "
			    "dpdk, not of pcap\n");
	run_cap((const char *[]){ "--check", "--backend", "raw", "--immediate", "--pcap-api", "next", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: --pcap-api and --immediate are options "
			    "of --backend pcap, not of raw\n");
}

/* The value of row o's default, as it is written on a command line; NULL
 * where the default is said in words. */
static const char *default_arg(const struct cb_opt *o, char *buf, size_t len)
{
	if (!o->has_default)
		return NULL;
	if (o->type == CB_OPT_CHOICE)
		return cb_opt_choice_name(o->choices, (int)o->def);
	if (o->def_text)
		return o->type == CB_OPT_QUEUES ? o->def_text : NULL;
	snprintf(buf, len, "%llu", (unsigned long long)o->def);
	return buf;
}

static uint64_t stored(const struct cb_opt *o, const struct cap_cfg *cfg)
{
	const char *p = (const char *)cfg + o->off;

	return o->size == 8 ? *(const uint64_t *)p : *(const uint32_t *)p;
}

/* A backend's own port option stands for --iface: a PCI port bound to
 * vfio-pci has no kernel interface. */
static void test_a_port_option_needs_no_interface(void **state)
{
	const struct cap_backend *be = backend("dpdk");
	char *argv[] = { "capbench-cap", "--check", "--backend", "dpdk", "--dpdk-devargs",
			 "0000:01:00.0", NULL };
	struct cap_cfg cfg;
	int check;

	assert_string_equal(be->caps.port_option, "dpdk-devargs");
	if (be->absent)
		return; /* refused with its line: test_every_table_parses_its_defaults */
	optind = 0;
	assert_ptr_equal(cap_configure(6, argv, &cfg, &check), be);
	assert_string_equal(cfg.iface, "0000:01:00.0");
	assert_int_equal(cfg.ifindex, 0);
	run_cap((const char *[]){ "--backend", "dpdk", "--duration", "1", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: no interface given: use --iface IF, or --read FILE to "
			    "decode a capture (see --help)\n");
}

/* Every backend's table takes its own defaults, and stores them; a backend
 * this build cannot run (dpdk without libdpdk) is refused with its reason. */
static void test_every_table_parses_its_defaults(void **state)
{
	for (int i = 0; cap_backends[i]; i++) {
		if (cap_backends[i]->absent) {
			char want[512];

			run_cap((const char *[]){ "--check", "--backend", cap_backends[i]->name, NULL }, &r);
			assert_int_equal(r.status, CB_EXIT_USAGE);
			snprintf(want, sizeof(want), "capbench-cap: --backend %s: %s\n", cap_backends[i]->name,
				 cap_backends[i]->absent);
			assert_string_equal(r.err, want);
			continue;
		}
		for (const struct cb_opt *o = cap_backends[i]->options; o && o->name; o++) {
			char flag[64], val[32];
			const char *v = default_arg(o, val, sizeof(val));
			char *argv[] = { "capbench-cap", "--check", "--backend",
					 (char *)cap_backends[i]->name, flag, (char *)v, NULL };
			struct cap_cfg cfg;
			int check;

			if (!v)
				continue;
			snprintf(flag, sizeof(flag), "--%s", o->name);
			optind = 0;
			assert_ptr_equal(cap_configure(6, argv, &cfg, &check), cap_backends[i]);
			if (o->size)
				assert_int_equal(stored(o, &cfg), o->def);
		}
	}
}

/* Shared options take the chosen backend's range. */
static void test_shared_option_takes_the_backends_range(void **state)
{
	run_cap((const char *[]){ "--check", "--backend", "raw", "--batch", "2000", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: bad --batch '2000': give 1..1024 packets per "
			    "recvmmsg call\n");
	run_cap((const char *[]){ "--check", "--backend", "afxdp", "--batch", "2000", NULL }, &r);
	assert_int_equal(r.status, 0);
	run_cap((const char *[]){ "--check", "--backend", "afxdp", "--batch", "4097", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: bad --batch '4097': give 1..4096 descriptors\n");
	run_cap((const char *[]){ "--check", "--backend", "afxdp", "--ring-size", "96", NULL }, &r);
	assert_string_equal(r.err, "capbench-cap: bad --ring-size '96': give a power of two from "
			    "64 to 1048576\n");
}

static void test_help_lists_every_option(void **state)
{
	run_cap((const char *[]){ "--help", NULL }, &r);
	assert_int_equal(r.status, 0);
	for (int i = -1; i < 0 || cap_backends[i]; i++) {
		const struct cb_opt *t = i < 0 ? NULL : cap_backends[i]->options;
		char want[64];

		if (i >= 0) {
			snprintf(want, sizeof(want), "--backend %s", cap_backends[i]->name);
			assert_non_null(strstr(r.out, want));
		}
		for (; t && t->name; t++) {
			snprintf(want, sizeof(want), "--%s ", t->name);
			assert_non_null(strstr(r.out, want));
		}
	}
	for (const char *const *n = (const char *const[]){ "--iface", "--app-load", "--write",
		"--count", "--duration", "--describe", "--check", "--no-promisc", NULL }; *n; n++)
		assert_non_null(strstr(r.out, *n));
}

static void test_describe_is_json_with_every_backend(void **state)
{
	run_cap((const char *[]){ "--describe", NULL }, &r);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.err, "");
	assert_true(json_valid(r.out));
	assert_non_null(strstr(r.out, "\"program\":\"capbench-cap\""));
	for (int i = 0; cap_backends[i]; i++) {
		char want[64];

		snprintf(want, sizeof(want), "{\"name\":\"%s\",\"summary\":", cap_backends[i]->name);
		assert_non_null(strstr(r.out, want));
		for (const struct cb_opt *o = cap_backends[i]->options; o && o->name; o++) {
			snprintf(want, sizeof(want), "\"name\":\"--%s\"", o->name);
			assert_non_null(strstr(r.out, want));
		}
	}
	for (const struct app_load_form *f = app_load_forms; f->name; f++) {
		char want[64];

		snprintf(want, sizeof(want), "{\"name\":\"%s\"", f->name);
		assert_non_null(strstr(r.out, want));
	}
	/* A knob's candidates: powers of two of its tune range, its choices,
	 * a flag's off and on. */
	assert_non_null(strstr(r.out, "\"candidates\":[65536,131072,262144,524288,1048576,2097152,4194304]"));
	assert_non_null(strstr(r.out, "\"candidates\":[\"hash\",\"lb\",\"cpu\",\"qm\",\"rollover\"]"));
	assert_non_null(strstr(r.out, "\"candidates\":[\"off\",\"on\"]"));
	/* A checker that can fail. */
	assert_false(json_valid("{\"a\":1,}"));
	assert_false(json_valid("{\"a\":1} x"));
}

/* Every backend declares its loss account (account.h): each row says its
 * layer, counter and explanation, no two rows are the same counter, and
 * stats() has a slot for each; only a kernel counter (xdp), which loses
 * nothing of its own, may declare none. --describe prints every row, and
 * which are cross-checks. */
static void test_every_backend_declares_its_account(void **state)
{
	run_cap((const char *[]){ "--describe", NULL }, &r);
	assert_int_equal(r.status, 0);
	for (int i = 0; cap_backends[i]; i++) {
		const struct cap_backend *b = cap_backends[i];
		unsigned int n = 0;

		assert_non_null(b->account);
		for (const struct cap_account_row *row = b->account; row->layer; row++, n++) {
			char want[512];

			assert_true(n < CAP_ACCOUNT_ROWS);
			assert_non_null(row->counter);
			assert_non_null(row->explains);
			assert_true(row->layer[0] && row->counter[0] && strlen(row->explains) > 20);
			for (const struct cap_account_row *o = b->account; o < row; o++)
				assert_false(!strcmp(o->layer, row->layer) && !strcmp(o->counter, row->counter));
			snprintf(want, sizeof(want), "{\"layer\":\"%s\",\"counter\":\"%s\",\"explains\":\"%s\",\"cross_check\":%s}",
				 row->layer, row->counter, row->explains,
				 CAP_ACCOUNT_CROSS_CHECK(b, row - b->account) ? "true" : "false");
			assert_non_null(strstr(r.out, want));
		}
		if (!b->caps.kernel_counter)
			assert_true(n > 0);
		assert_true(n >= 32 || b->account_cross_checks >> n == 0); /* only its rows are cross-checks */
	}
}

/* The --app-load grammar table parses each form at its bounds. */
static void test_app_load_forms(void **state)
{
	struct app_load l;
	char s[64];

	for (const struct app_load_form *f = app_load_forms; f->name; f++) {
		if (!f->param) {
			assert_int_equal(app_load_parse(f->name, &l), 0);
			assert_int_equal(l.kind, f->kind);
			snprintf(s, sizeof(s), "%s:1", f->name);
			assert_int_not_equal(app_load_parse(s, &l), 0);
			continue;
		}
		snprintf(s, sizeof(s), "%s:%llu", f->name, (unsigned long long)f->max);
		assert_int_equal(app_load_parse(s, &l), 0);
		assert_int_equal(l.kind, f->kind);
		snprintf(s, sizeof(s), "%s:%llu", f->name, (unsigned long long)f->max + 1);
		assert_int_not_equal(app_load_parse(s, &l), 0);
		if (f->min) {
			snprintf(s, sizeof(s), "%s:%llu", f->name, (unsigned long long)f->min - 1);
			assert_int_not_equal(app_load_parse(s, &l), 0);
		}
		assert_int_not_equal(app_load_parse(f->name, &l), 0);
	}
	assert_int_equal(app_load_parse("zlib:9", &l), 0);
	app_load_format(&l, s, sizeof(s));
	assert_string_equal(s, "zlib:9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantile_small_values_are_exact),
		cmocka_unit_test(test_quantile_is_the_bucket_midpoint),
		cmocka_unit_test(test_quantile_error_is_half_a_bucket),
		cmocka_unit_test(test_ring_bytes),
		cmocka_unit_test(test_candidates),
		cmocka_unit_test(test_options_of_other_backends_are_refused),
		cmocka_unit_test(test_every_table_parses_its_defaults),
		cmocka_unit_test(test_a_port_option_needs_no_interface),
		cmocka_unit_test(test_shared_option_takes_the_backends_range),
		cmocka_unit_test(test_help_lists_every_option),
		cmocka_unit_test(test_describe_is_json_with_every_backend),
		cmocka_unit_test(test_every_backend_declares_its_account),
		cmocka_unit_test(test_app_load_forms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
