/* SPDX-License-Identifier: MIT */
/* Unit tests: wire-rate and gap arithmetic, --rate and --link parsing. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rate.h"

/* Seed 000, Table 1: szedata2's throughput at 1.0 Gbps per frame length,
 * which is the 1 GbE wire rate to within one packet per second. One entry
 * differs: Table 1 prints 550066 for 207 B, a transposition of 550661
 * (1e9 / (227 * 8) = 550660.8; the same seed's Table 2 shows 550691). */
static const struct { unsigned int len; double pps; } table1[] = {
	{ 1518, 81275 }, { 1319, 93353 }, { 1280, 96154 }, { 1174, 104690 },
	{ 1024, 119732 }, { 726, 167560 }, { 512, 234963 }, { 313, 375375 },
	{ 256, 452899 }, { 207, 550661 }, { 128, 844595 }, { 73, 1344086 },
	{ 64, 1488095 },
};

static void test_seed_table1_wire_rates(void **state)
{
	for (size_t i = 0; i < sizeof(table1) / sizeof(table1[0]); i++) {
		double pps = cb_wire_pps(1e9, table1[i].len);

		if (fabs(pps - table1[i].pps) > 1.0)
			fail_msg("%u B: %.1f pps, table says %.0f", table1[i].len, pps,
				 table1[i].pps);
	}
}

static void test_wire_bps_inverse(void **state)
{
	assert_true(fabs(cb_wire_bps(cb_wire_pps(10e9, 64), 64) - 10e9) < 1e-3);
}

static void test_gap_fixed_point(void **state)
{
	/* 1.488095 Mpps: 672 ns per frame. */
	uint64_t g = cb_gap_fp16(cb_wire_pps(1e9, 64));

	assert_true(g == 672ull * 65536);
	/* 3 Mpps: 333.33 ns, kept to 1/65536 ns. */
	g = cb_gap_fp16(3e6);
	assert_true(fabs((double)g / 65536.0 - 1e9 / 3e6) < 1.0 / 65536);
	/* Over 10 s at 3 Mpps the schedule drifts by less than 1 us. */
	assert_true(fabs((double)(30000000ull * g >> 16) - 10e9) < 1000);
	assert_true(cb_gap_fp16(0) == 0);
}

static void parse_ok(const char *s, enum cb_rate_kind kind, double value)
{
	struct cb_rate r;

	if (cb_parse_rate(s, &r))
		fail_msg("'%s' did not parse", s);
	assert_int_equal(r.kind, kind);
	if (fabs(r.value - value) > 1e-6 * value)
		fail_msg("'%s' gave %g, expected %g", s, r.value, value);
}

static void test_parse_rate(void **state)
{
	struct cb_rate r;

	parse_ok("1.2Mpps", CB_RATE_PPS, 1.2e6);
	parse_ok("800kpps", CB_RATE_PPS, 800e3);
	parse_ok("5000pps", CB_RATE_PPS, 5000);
	parse_ok("1g", CB_RATE_BPS, 1e9);
	parse_ok("950m", CB_RATE_BPS, 950e6);
	parse_ok("10G", CB_RATE_BPS, 10e9);
	parse_ok("100%", CB_RATE_PERCENT, 100);
	parse_ok("12.5%", CB_RATE_PERCENT, 12.5);
	assert_int_equal(cb_parse_rate("max", &r), 0);
	assert_int_equal(r.kind, CB_RATE_MAX);
	assert_int_equal(cb_parse_rate("fast", &r), -EINVAL);
	assert_int_equal(cb_parse_rate("", &r), -EINVAL);
	assert_int_equal(cb_parse_rate("-5kpps", &r), -EINVAL);
	assert_int_equal(cb_parse_rate("0pps", &r), -ERANGE);
	assert_int_equal(cb_parse_rate("10 parsecs", &r), -EINVAL);
}

static void test_rate_to_pps(void **state)
{
	struct cb_rate r;
	double pps;

	cb_parse_rate("100%", &r);
	assert_int_equal(cb_rate_pps(&r, 1e9, 1518, &pps), 0);
	assert_true(fabs(pps - 81274.38) < 0.01);
	cb_parse_rate("1g", &r);
	assert_int_equal(cb_rate_pps(&r, 1e9, 64, &pps), 0);
	assert_true(fabs(pps - 1488095.24) < 0.01);
	cb_parse_rate("50%", &r);
	assert_int_equal(cb_rate_pps(&r, 10e9, 64, &pps), 0);
	assert_true(fabs(pps - 7440476.19) < 0.01);
	/* Above the wire rate of the link. */
	cb_parse_rate("1.5Mpps", &r);
	assert_int_equal(cb_rate_pps(&r, 1e9, 64, &pps), -ERANGE);
	cb_parse_rate("101%", &r);
	assert_int_equal(cb_rate_pps(&r, 1e9, 64, &pps), -ERANGE);
	cb_parse_rate("max", &r);
	assert_int_equal(cb_rate_pps(&r, 1e9, 64, &pps), 0);
	assert_true(pps == 0);
}

static void test_parse_link(void **state)
{
	double bps;

	assert_int_equal(cb_parse_link("1g", &bps), 0);
	assert_true(bps == 1e9);
	assert_int_equal(cb_parse_link("100G", &bps), 0);
	assert_true(bps == 100e9);
	assert_int_equal(cb_parse_link("25gbe", &bps), 0);
	assert_true(bps == 25e9);
	assert_int_equal(cb_parse_link("fast", &bps), -EINVAL);
	assert_int_equal(cb_parse_link("0g", &bps), -EINVAL);
	assert_int_equal(cb_parse_link("3g", &bps), -EINVAL);
	assert_int_equal(cb_parse_link("100m", &bps), -EINVAL);
}

/* --duration S at a paced rate: exactly round(pps * S) frames. */
static void test_frames_in_duration(void **state)
{
	assert_int_equal(cb_frames_in(100000, 2), 200000);   /* --duration 2 --rate 100kpps */
	assert_int_equal(cb_frames_in(cb_wire_pps(1e9, 64), 1), 1488095);
	assert_int_equal(cb_frames_in(cb_wire_pps(1e9, 1518), 5), 406372); /* 81274.38 x 5 */
	assert_int_equal(cb_frames_in(10000, 0.25), 2500);
	assert_int_equal(cb_frames_in(1, 0.4), 0);            /* less than one frame */
	assert_int_equal(cb_frames_in(1, 0.5), 1);            /* halves round up */
	assert_int_equal(cb_frames_in(3, 0.5), 2);
	assert_int_equal(cb_frames_in(0, 5), 0);              /* unpaced */
	assert_int_equal(cb_frames_in(100000, 0), 0);
	assert_true(cb_frames_in(1e12, 1e9) == UINT64_MAX);   /* saturates */
}

/* --threads N: the lanes' counts add up to the total, and differ by one at most. */
static void test_lane_counts_add_up(void **state)
{
	static const uint64_t totals[] = { 1, 2, 7, 63, 64, 65, 199999, 200000, 200001, 1488095 };

	for (size_t t = 0; t < sizeof(totals) / sizeof(totals[0]); t++) {
		for (unsigned int n = 1; n <= 64; n++) {
			uint64_t sum = 0, lo = UINT64_MAX, hi = 0;

			for (unsigned int i = 0; i < n; i++) {
				uint64_t c = cb_lane_count(totals[t], n, i);

				sum += c;
				lo = c < lo ? c : lo;
				hi = c > hi ? c : hi;
			}
			if (sum != totals[t] || hi - lo > 1)
				fail_msg("%llu frames over %u lanes: sum %llu, shares %llu..%llu",
					 (unsigned long long)totals[t], n, (unsigned long long)sum,
					 (unsigned long long)lo, (unsigned long long)hi);
		}
	}
	assert_int_equal(cb_lane_count(200000, 3, 0), 66667);
	assert_int_equal(cb_lane_count(200000, 3, 2), 66666);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_table1_wire_rates),
		cmocka_unit_test(test_wire_bps_inverse),
		cmocka_unit_test(test_gap_fixed_point),
		cmocka_unit_test(test_parse_rate),
		cmocka_unit_test(test_rate_to_pps),
		cmocka_unit_test(test_parse_link),
		cmocka_unit_test(test_frames_in_duration),
		cmocka_unit_test(test_lane_counts_add_up),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
