/* SPDX-License-Identifier: MIT */
/* Unit tests: --size profiles, their reproducible draw, and the departure
 * schedule built from them. */
#include <errno.h>
#include <math.h>
#include <pcap/pcap.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "schedule.h"
#include "sizes.h"

#define DRAWS 1000000
/* A share drawn 1,000,000 times has a standard deviation of at most 0.05
 * percentage points; the draw is deterministic for a seed, so this bound
 * (10 sigma) never flakes and still catches a wrong weight. */
#define SHARE_TOLERANCE 0.005

static char err[512];

static void parse_ok(const char *spec, struct cb_size_profile *p)
{
	int rc = cb_sizes_parse(spec, p, err, sizeof(err));

	if (rc)
		fail_msg("%s: %d %s", spec, rc, err);
}

static void check_shares(const char *spec, const unsigned int *lens, const double *shares,
			 unsigned int n)
{
	struct cb_size_profile p;
	struct cb_size_draw d;
	unsigned long *hits = calloc(CB_FRAME_MAX + 1, sizeof(*hits));

	parse_ok(spec, &p);
	cb_size_draw_init(&d, &p, 42);
	for (int i = 0; i < DRAWS; i++)
		hits[cb_size_next(&d)]++;
	for (unsigned int i = 0; i < n; i++) {
		double got = (double)hits[lens[i]] / DRAWS;

		if (fabs(got - shares[i]) > SHARE_TOLERANCE)
			fail_msg("%s: %u B drawn %.4f, weight says %.4f", spec, lens[i], got, shares[i]);
		hits[lens[i]] = 0;
	}
	for (unsigned int len = 0; len <= CB_FRAME_MAX; len++)
		if (hits[len])
			fail_msg("%s: drew %u B, which is not in the profile", spec, len);
	free(hits);
	cb_sizes_free(&p);
}

static void test_imix_seed_shares(void **state)
{
	static const unsigned int lens[] = { 64, 570, 594, 1518 };
	static const double shares[] = { 0.57, 0.07, 0.16, 0.20 };

	check_shares("imix:seed", lens, shares, 4);
}

static void test_imix_simple_shares(void **state)
{
	static const unsigned int lens[] = { 64, 594, 1518 };
	static const double shares[] = { 7 / 12.0, 4 / 12.0, 1 / 12.0 };

	check_shares("imix:simple", lens, shares, 3);
}

static void test_same_seed_same_frames(void **state)
{
	struct cb_size_profile p;
	struct cb_size_draw a, b, c;
	int differ = 0;

	parse_ok("random:64-1518", &p);
	cb_size_draw_init(&a, &p, 7);
	cb_size_draw_init(&b, &p, 7);
	cb_size_draw_init(&c, &p, 8);
	for (int i = 0; i < 100000; i++) {
		unsigned int x = cb_size_next(&a);

		assert_int_equal(x, cb_size_next(&b));
		differ += x != cb_size_next(&c);
	}
	assert_true(differ > 99000); /* another seed, another sequence */
	cb_sizes_free(&p);
}

static void test_uniform(void **state)
{
	struct cb_size_profile p;
	struct cb_size_draw d;
	unsigned int lo = UINT32_MAX, hi = 0;
	double sum = 0;

	parse_ok("random:64-1518", &p);
	assert_true(p.mean_len == 791.0);
	cb_size_draw_init(&d, &p, 1);
	for (int i = 0; i < DRAWS; i++) {
		unsigned int x = cb_size_next(&d);

		lo = x < lo ? x : lo;
		hi = x > hi ? x : hi;
		sum += x;
	}
	assert_int_equal(lo, 64);
	assert_int_equal(hi, 1518);
	/* The mean of 1,000,000 uniform draws is within 1 B (2.4 sigma: 0.42 B). */
	assert_true(fabs(sum / DRAWS - 791.0) < 1.5);
	cb_sizes_free(&p);
}

static void test_lists_cycle_in_order(void **state)
{
	static const unsigned int seed13[] = { 64, 73, 128, 207, 256, 313, 512, 726, 1024,
					       1174, 1280, 1319, 1518 };
	struct cb_size_profile p;
	struct cb_size_draw d;

	parse_ok("seed", &p);
	cb_size_draw_init(&d, &p, 1);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 13; i++)
			assert_int_equal(cb_size_next(&d), seed13[i]);
	cb_sizes_free(&p);

	parse_ok("1518,64,594", &p);
	assert_int_equal(p.n, 3);
	assert_int_equal(p.min_len, 64);
	assert_int_equal(p.max_len, 1518);
	cb_size_draw_init(&d, &p, 1);
	assert_int_equal(cb_size_next(&d), 1518);
	assert_int_equal(cb_size_next(&d), 64);
	assert_int_equal(cb_size_next(&d), 594);
	assert_int_equal(cb_size_next(&d), 1518);
	cb_sizes_free(&p);

	parse_ok("rfc2544", &p);
	assert_int_equal(p.n, 7);
	cb_sizes_free(&p);
}

static void test_bad_specs(void **state)
{
	struct cb_size_profile p;
	static const char *bad[] = { "63", "9019", "big", "imix:huge", "random:100-64",
				     "random:10-100", "random:64", "64,", ",64", "64,,128", "" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (!cb_sizes_parse(bad[i], &p, err, sizeof(err)))
			fail_msg("'%s' was accepted", bad[i]);
		assert_true(strlen(err) > 10);
	}
	assert_int_equal(cb_sizes_parse("dist:/nonexistent.csv", &p, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent.csv"));
}

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/cb-sizes-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void test_dist_file(void **state)
{
	struct cb_size_profile p;
	char spec[96], *path;

	path = write_tmp("length,weight\n# the seed's IMIX\n64, 57\n570,7\n\n594,16\n1518 , 20\n");
	snprintf(spec, sizeof(spec), "dist:%s", path);
	parse_ok(spec, &p);
	assert_int_equal(p.kind, CB_SIZES_WEIGHTED);
	assert_int_equal(p.n, 4);
	assert_true(fabs(p.mean_len - 475.02) < 1e-9);
	cb_sizes_free(&p);
	unlink(path);
}

static void dist_path_fails(const char *path, const char *words)
{
	struct cb_size_profile p;
	char spec[96];

	snprintf(spec, sizeof(spec), "dist:%s", path);
	err[0] = 0;
	if (!cb_sizes_parse(spec, &p, err, sizeof(err)))
		fail_msg("accepted: %s", path);
	if (!strstr(err, words) || !strstr(err, path))
		fail_msg("error '%s' lacks '%s' or the file name", err, words);
}

static void dist_fails(const char *text, const char *words)
{
	char *path = write_tmp(text);

	dist_path_fails(path, words);
	unlink(path);
}

static void test_dist_file_errors(void **state)
{
	dist_fails("64,1\n128,-2\n", "line 2");
	dist_fails("64,0\n128,0\n", "positive weight");
	dist_fails("length,weight\n64,x\n", "line 2");
	/* A first row with a number in its length column is data, not a header. */
	dist_fails("64,abc\n128,5\n", "line 1");
	/* So is one with a number anywhere: a length with a unit, a negative one, a fraction. */
	dist_fails("1518B,20\n64,80\n", "line 1");
	dist_fails("-1518,20\n64,80\n", "line 1");
	dist_fails("64.5,1\n", "line 1");
	dist_fails("64,1\n63,1\n", "line 2");
	dist_fails("64 1\n", "line 1");
	dist_fails("", "positive weight");
}

/* Issue 15: lines of any length keep their numbers (a 256-byte buffer once
 * turned a long comment's tail into a row named by the wrong line), a UTF-8
 * byte order mark is no row, and weights must add up to a finite number. */
static void test_dist_file_hardening(void **state)
{
	struct cb_size_profile p;
	char spec[96], *text, *path;
	size_t long_len = 5000;

	/* A comment of 5,000 characters whose tail would look like a row. */
	text = malloc(long_len + 64);
	memset(text, 'x', long_len);
	memcpy(text, "# ", 2);
	strcpy(text + long_len - 8, ",64,1\n64,1\n");
	path = write_tmp(text);
	snprintf(spec, sizeof(spec), "dist:%s", path);
	parse_ok(spec, &p);
	assert_int_equal(p.n, 1);
	cb_sizes_free(&p);
	unlink(path);
	/* A bad row after a long one is named by its own line number. */
	memset(text, ' ', long_len);
	strcpy(text + long_len - 8, "  64,1\n128,1\n63,1\n");
	dist_fails(text, "line 3");
	free(text);

	path = write_tmp("\xef\xbb\xbflength,weight\n64,1\n1518,1\n");
	snprintf(spec, sizeof(spec), "dist:%s", path);
	parse_ok(spec, &p);
	assert_int_equal(p.n, 2);
	cb_sizes_free(&p);
	unlink(path);
	path = write_tmp("\xef\xbb\xbf" "64,1\r\n1518,1\r\n");
	snprintf(spec, sizeof(spec), "dist:%s", path);
	parse_ok(spec, &p);
	assert_true(fabs(p.mean_len - 791.0) < 1e-9);
	cb_sizes_free(&p);
	unlink(path);

	dist_fails("64,1e308\n128,1e308\n", "line 2");
	/* Found by fuzz_dist: one weight near DBL_MAX made the mean length
	 * infinite (length x weight overflowed before the division). */
	path = write_tmp("64,1\n128,1e308\n");
	snprintf(spec, sizeof(spec), "dist:%s", path);
	parse_ok(spec, &p);
	assert_true(fabs(p.mean_len - 128.0) < 1e-9);
	cb_sizes_free(&p);
	unlink(path);
	/* Also by fuzz_dist: shares adding up to a hair below 1 put the mean
	 * below the only length. */
	path = write_tmp("64,.05\n64,2e-3\n");
	snprintf(spec, sizeof(spec), "dist:%s", path);
	parse_ok(spec, &p);
	assert_true(p.mean_len >= 64.0 && p.mean_len <= 64.0);
	cb_sizes_free(&p);
	unlink(path);
	dist_fails("64,1\n128,inf\n", "line 2");
	dist_fails("64,1\n128,nan\n", "line 2");
	dist_fails("64,1\n128,1e999\n", "line 2");
	dist_fails("64,1\n128,-0.5\n", "line 2");
}

/* Found by 1,000 generated dist: files (issue 15's check): a bad row was
 * echoed with its control bytes (CR, form feed, ESC), so the one-line error
 * broke into several or drove the terminal. */
static void test_dist_error_is_one_printable_line(void **state)
{
	const char *rows[] = { "l\r\x1b[2J\n", "9999\f.g,1e-320\n", ("64 \x0b,\x13" "55\r\n"),
			       "64\x7f,1\n" };
	const char *c;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		dist_fails(rows[i], "line 1");
		for (c = err; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				fail_msg("row %zu: control byte 0x%02x in '%s'", i, (unsigned char)*c, err);
	}
}

/* dist: and trace: read regular files only, and never block or spin on a
 * device, a FIFO or a directory: one line naming the file and what it is. */
static void special_fails(const char *kind, const char *path, const char *words)
{
	struct cb_size_profile p;
	char spec[128];

	snprintf(spec, sizeof(spec), "%s:%s", kind, path);
	err[0] = 0;
	assert_int_not_equal(cb_sizes_parse(spec, &p, err, sizeof(err)), 0);
	if (!strstr(err, words) || !strstr(err, path) || strchr(err, '\n'))
		fail_msg("%s: error '%s' lacks '%s' or the path", spec, err, words);
}

static void test_inputs_are_regular_files(void **state)
{
	char fifo[64] = "/tmp/cb-fifo-XXXXXX", dir[64] = "/tmp/cb-dir-XXXXXX";

	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (int i = 0; i < 2; i++) {
		const char *kind = i ? "trace" : "dist";

		special_fails(kind, "/dev/zero", "character device");
		special_fails(kind, "/dev/null", "character device");
		special_fails(kind, fifo, "FIFO"); /* would block without O_NONBLOCK */
		special_fails(kind, dir, "directory");
	}
	special_fails("dist", "", "empty");
	unlink(fifo);
	rmdir(dir);
}

/* A file above the size limit is refused before it is read. */
static void test_dist_file_size_limit(void **state)
{
	char *path = write_tmp("64,1\n");

	assert_int_equal(truncate(path, (off_t)CB_DIST_FILE_MAX + 1), 0);
	dist_path_fails(path, "MiB");
	unlink(path);
}

/* A pcap of `n` frames whose on-wire lengths (no FCS) are lens[i]. */
static char *write_pcap(int linktype, const unsigned int *lens, int n, long cut)
{
	static char path[64];
	static u_char frame[CB_FRAME_MAX];
	pcap_t *dead = pcap_open_dead(linktype, 65535);
	pcap_dumper_t *dump;
	FILE *f;
	long size;

	strcpy(path, "/tmp/cb-trace-XXXXXX");
	close(mkstemp(path));
	dump = pcap_dump_open(dead, path);
	assert_non_null(dump);
	for (int i = 0; i < n; i++) {
		struct pcap_pkthdr h = { .caplen = lens[i] < 96 ? lens[i] : 96, .len = lens[i] };

		pcap_dump((u_char *)dump, &h, frame);
	}
	pcap_dump_close(dump);
	pcap_close(dead);
	if (cut) {
		f = fopen(path, "r+");
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fclose(f);
		assert_int_equal(truncate(path, size - cut), 0);
	}
	return path;
}

static void test_trace_learns_the_lengths(void **state)
{
	/* 42 B (an ARP before padding: 64 B on the wire), 3 x 60 B, 1514 B. */
	static const unsigned int lens[] = { 42, 60, 60, 60, 1514, 1514 };
	struct cb_size_profile p;
	char spec[96], *path = write_pcap(DLT_EN10MB, lens, 6, 0);

	snprintf(spec, sizeof(spec), "trace:%s", path);
	parse_ok(spec, &p);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.lens[0], 64);
	assert_int_equal(p.lens[1], 1518);
	assert_true(fabs(p.cdf[0] - 4 / 6.0) < 1e-12);
	cb_sizes_free(&p);
	unlink(path);
}

static void test_trace_errors(void **state)
{
	static const unsigned int lens[] = { 60, 60, 60 };
	struct cb_size_profile p;
	char spec[96], *path;

	path = write_pcap(DLT_RAW, lens, 3, 0);
	snprintf(spec, sizeof(spec), "trace:%s", path);
	assert_int_not_equal(cb_sizes_parse(spec, &p, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "link type"));
	unlink(path);

	path = write_pcap(DLT_EN10MB, lens, 3, 20);
	snprintf(spec, sizeof(spec), "trace:%s", path);
	assert_int_not_equal(cb_sizes_parse(spec, &p, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "truncated"));
	unlink(path);

	path = write_pcap(DLT_EN10MB, lens, 0, 0);
	snprintf(spec, sizeof(spec), "trace:%s", path);
	assert_int_not_equal(cb_sizes_parse(spec, &p, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "no frames"));
	unlink(path);

	path = write_tmp("not a capture at all, but long enough to look at");
	snprintf(spec, sizeof(spec), "trace:%s", path);
	assert_int_not_equal(cb_sizes_parse(spec, &p, err, sizeof(err)), 0);
	assert_non_null(strstr(err, path));
	unlink(path);
}

static void test_imix_schedule_at_1gbe(void **state)
{
	struct cb_size_profile p;
	struct cb_schedule s;
	struct cb_rate r = { CB_RATE_PERCENT, 100 };
	double gap_ns = 0, bits = 0;

	parse_ok("imix:seed", &p);
	assert_int_equal(cb_schedule_build(&s, &p, 1, &r, 1e9), 0);
	assert_int_equal(s.n, CB_SCHED_DRAWS);
	/* Mean wire time (475.02 + 20) * 8 bits: 252,515 pps at 1 Gbit/s; the
	 * 65,536 draws of one cycle hit it within 0.5 %. */
	assert_true(fabs(s.target_pps - 1e9 / ((475.02 + 20) * 8)) < 0.005 * 252515);
	/* Every frame takes its own wire time: a cycle lasts exactly its bits. */
	for (uint32_t i = 0; i < s.n; i++) {
		gap_ns += s.e[i].gap_fp16 / 65536.0;
		bits += (s.e[i].len + 20) * 8.0;
	}
	assert_true(fabs(gap_ns - bits) < 1.0); /* 1 bit = 1 ns at 1 Gbit/s */
	cb_schedule_free(&s);

	r = (struct cb_rate){ CB_RATE_PERCENT, 101 };
	assert_int_equal(cb_schedule_build(&s, &p, 1, &r, 1e9), -ERANGE);
	/* 300 kpps of IMIX needs 1.19 Gbit/s. */
	r = (struct cb_rate){ CB_RATE_PPS, 300000 };
	assert_int_equal(cb_schedule_build(&s, &p, 1, &r, 1e9), -ERANGE);
	r = (struct cb_rate){ CB_RATE_PPS, 250000 };
	assert_int_equal(cb_schedule_build(&s, &p, 1, &r, 1e9), 0);
	assert_true(s.e[0].gap_fp16 == s.e[1].gap_fp16);
	cb_schedule_free(&s);
	cb_sizes_free(&p);
}

static void test_single_length_schedule(void **state)
{
	struct cb_size_profile p;
	struct cb_schedule s;
	struct cb_rate r = { CB_RATE_PERCENT, 100 };

	parse_ok("64", &p);
	assert_int_equal(cb_schedule_build(&s, &p, 1, &r, 1e9), 0);
	assert_int_equal(s.n, 1);
	assert_true(fabs(s.target_pps - 1488095.238) < 0.01);
	assert_int_equal(s.e[0].gap_fp16, cb_gap_fp16(1e9 / 672.0));
	cb_schedule_free(&s);
	r = (struct cb_rate){ CB_RATE_MAX, 0 };
	assert_int_equal(cb_schedule_build(&s, &p, 1, &r, 1e9), 0);
	assert_int_equal(s.paced, 0);
	cb_schedule_free(&s);
	cb_sizes_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_imix_seed_shares),
		cmocka_unit_test(test_imix_simple_shares),
		cmocka_unit_test(test_same_seed_same_frames),
		cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_lists_cycle_in_order),
		cmocka_unit_test(test_bad_specs),
		cmocka_unit_test(test_dist_file),
		cmocka_unit_test(test_dist_file_errors),
		cmocka_unit_test(test_dist_file_hardening),
		cmocka_unit_test(test_dist_error_is_one_printable_line),
		cmocka_unit_test(test_inputs_are_regular_files),
		cmocka_unit_test(test_dist_file_size_limit),
		cmocka_unit_test(test_trace_learns_the_lengths),
		cmocka_unit_test(test_trace_errors),
		cmocka_unit_test(test_imix_schedule_at_1gbe),
		cmocka_unit_test(test_single_length_schedule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
