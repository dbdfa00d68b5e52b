/* SPDX-License-Identifier: MIT */
/* Unit tests: frame builder, checksums and the stamp. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "packet.h"

static void test_inet_csum_rfc1071_example(void **state)
{
	/* RFC 1071 section 3 example bytes: 00 01 f2 03 f4 f5 f6 f7, sum ddf2 */
	const uint8_t data[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	assert_int_equal(cb_inet_csum(data, sizeof(data)), (uint16_t)~0xddf2);
}

static void test_inet_csum_odd_length(void **state)
{
	const uint8_t data[] = { 0x12, 0x34, 0x56 };

	/* 0x1234 + 0x5600 = 0x6834 -> ~ = 0x97cb */
	assert_int_equal(cb_inet_csum(data, sizeof(data)), 0x97cb);
}

static void test_ip_header_checksum_verifies(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[2048];

	cb_frame_spec_default(&s);
	for (unsigned int len = 64; len <= 1518; len += 97) {
		s.frame_len = len;
		assert_int_equal(cb_frame_build(&s, buf, sizeof(buf)), (int)len - 4);
		/* A header with a correct checksum sums to 0xffff: csum 0. */
		assert_int_equal(cb_inet_csum(buf + 14, 20), 0);
	}
}

static void test_known_header_checksum(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[128];

	cb_frame_spec_default(&s);
	s.frame_len = 64;
	cb_frame_build(&s, buf, sizeof(buf));
	/* 45 00 002e 0000 4000 40 11 csum c612 0001 c612 0002, by hand:
	 * 4500+002e+0000+4000+4011+c612+0001+c612+0002 = 0x25166,
	 * folded 0x5168, complemented 0xae97. */
	assert_int_equal(buf[24], 0xae);
	assert_int_equal(buf[25], 0x97);
}

static void test_frame_layout_64(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[128];

	cb_frame_spec_default(&s);
	s.stream = 3;
	s.frame_len = 64;
	assert_int_equal(cb_frame_build(&s, buf, sizeof(buf)), 60);
	assert_memory_equal(buf, s.dst_mac, 6);
	assert_memory_equal(buf + 6, s.src_mac, 6);
	assert_int_equal(buf[12] << 8 | buf[13], 0x0800);
	assert_int_equal(buf[14 + 2] << 8 | buf[14 + 3], 46);   /* IP total length */
	assert_int_equal(buf[34] << 8 | buf[35], CB_UDP_SRC_PORT_BASE + 3);
	assert_int_equal(buf[36] << 8 | buf[37], CB_UDP_DST_PORT);
	assert_int_equal(buf[38] << 8 | buf[39], 26);           /* UDP length */
	assert_int_equal(buf[40] | buf[41], 0);                 /* no UDP csum */
	/* The 18 B stamp fills the payload of a 64 B frame exactly. */
	assert_int_equal(60 - CB_STAMP_OFF, CB_STAMP_LEN);
}

/* A frame cut from a longer template, as the generators cut every shorter
 * frame of a size profile: lengths and checksum must be those of a frame
 * built at that length. */
static void test_set_len_matches_a_frame_built_at_that_length(void **state)
{
	struct cb_frame_spec s;
	uint8_t big[CB_FRAME_MAX], small[CB_FRAME_MAX];

	cb_frame_spec_default(&s);
	s.frame_len = 1518;
	assert_int_equal(cb_frame_build(&s, big, sizeof(big)), 1514);
	for (unsigned int len = 64; len <= 1518; len += 101) {
		s.frame_len = len;
		cb_frame_build(&s, small, sizeof(small));
		cb_frame_set_len(big, len);
		assert_memory_equal(big, small, CB_STAMP_OFF);
		assert_int_equal(cb_inet_csum(big + CB_ETH_HLEN, CB_IP_HLEN), 0);
	}
}

static void test_frame_length_limits(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[64];

	cb_frame_spec_default(&s);
	s.frame_len = 63;
	assert_int_equal(cb_frame_build(&s, buf, sizeof(buf)), -EINVAL);
	s.frame_len = 1518;
	assert_int_equal(cb_frame_build(&s, buf, sizeof(buf)), -ENOSPC);
}

static void test_stamp_roundtrip(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[1600];
	uint64_t seq, ts;
	unsigned int stream;

	cb_frame_spec_default(&s);
	s.stream = 7;
	s.frame_len = 1518;
	cb_frame_build(&s, buf, sizeof(buf));
	cb_stamp_write(buf, 0x0123456789abcdefull, 987654321012345ull);
	assert_int_equal(cb_stamp_parse(buf, 1514, &seq, &ts, &stream), 1);
	assert_true(seq == 0x0123456789abcdefull);
	assert_true(ts == 987654321012345ull);
	assert_int_equal(stream, 7);
}

static void test_foreign_frames_rejected(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[128], copy[128];
	uint64_t seq, ts;
	unsigned int stream;

	cb_frame_spec_default(&s);
	cb_frame_build(&s, buf, sizeof(buf));
	assert_int_equal(cb_stamp_parse(buf, 60, &seq, &ts, &stream), 1);
	assert_int_equal(cb_stamp_parse(buf, 59, &seq, &ts, &stream), 0); /* truncated */

	memcpy(copy, buf, sizeof(copy));
	copy[13] = 0xdd; /* IPv6 ethertype */
	assert_int_equal(cb_stamp_parse(copy, 60, &seq, &ts, &stream), 0);
	memcpy(copy, buf, sizeof(copy));
	copy[23] = 6; /* TCP */
	assert_int_equal(cb_stamp_parse(copy, 60, &seq, &ts, &stream), 0);
	memcpy(copy, buf, sizeof(copy));
	copy[37] ^= 1; /* other port */
	assert_int_equal(cb_stamp_parse(copy, 60, &seq, &ts, &stream), 0);
	memcpy(copy, buf, sizeof(copy));
	copy[CB_STAMP_OFF] ^= 0xff; /* no magic */
	assert_int_equal(cb_stamp_parse(copy, 60, &seq, &ts, &stream), 0);
}

/* A trailer (stamp.h): same frame, magic with the trailer flag; not a data
 * frame, and a data frame is not a trailer. */
static void test_trailer_roundtrip(void **state)
{
	struct cb_frame_spec s;
	uint8_t buf[128];
	uint64_t a = 0, b = 0;
	unsigned int stream;

	cb_frame_spec_default(&s);
	s.stream = 3;
	cb_frame_build(&s, buf, sizeof(buf));
	assert_int_equal(cb_trailer_parse(buf, 60, &a, &b, &stream), 0);
	cb_trailer_write(buf, 199999, 200000);
	assert_int_equal(cb_stamp_parse(buf, 60, &a, &b, &stream), 0);
	assert_int_equal(cb_trailer_parse(buf, 60, &a, &b, &stream), 1);
	assert_true(a == 199999 && b == 200000);
	assert_int_equal(stream, 3);
	assert_int_equal(buf[CB_STAMP_OFF] | buf[CB_STAMP_OFF + 1] << 8, CB_STAMP_MAGIC | CB_TRAILER_FLAG);
	assert_int_equal(cb_trailer_parse(buf, 59, &a, &b, &stream), 0); /* truncated */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inet_csum_rfc1071_example),
		cmocka_unit_test(test_inet_csum_odd_length),
		cmocka_unit_test(test_ip_header_checksum_verifies),
		cmocka_unit_test(test_known_header_checksum),
		cmocka_unit_test(test_frame_layout_64),
		cmocka_unit_test(test_set_len_matches_a_frame_built_at_that_length),
		cmocka_unit_test(test_frame_length_limits),
		cmocka_unit_test(test_stamp_roundtrip),
		cmocka_unit_test(test_foreign_frames_rejected),
		cmocka_unit_test(test_trailer_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
