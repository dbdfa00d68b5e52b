/* SPDX-License-Identifier: MIT */
/* capbench-cap --read (src/cap/cap_read.c): pcap and pcapng files written
 * with the project's capture writer, capbench frames built by packet.c, and
 * the counts of the summary the decode prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <sys/stat.h>

#include "cap_run.h"
#include "packet.h"

#define LATENCY_NS 1000

struct fixture {
	char path[64];
	struct cap_cfg cfg;
	char out[65536];
};

/* The configuration of `capbench-cap --read PATH --group-size 4`, taken
 * before the file is written: its clock offset times the records. */
static void configure(struct fixture *f, const char *suffix)
{
	char *argv[] = { "capbench-cap", "--read", f->path, "--group-size", "4", NULL };
	int check;
	int fd;

	snprintf(f->path, sizeof(f->path), "/tmp/capbench-test-read-XXXXXX%s", suffix);
	fd = mkstemps(f->path, (int)strlen(suffix));
	assert_true(fd >= 0);
	close(fd);
	optind = 0;
	assert_null(cap_configure(5, argv, &f->cfg, &check));
	assert_false(check);
	/* An odd offset: the records' times then end in 1 ns, and the file reads as
	 * a 1 ns resolution, not 10 ns one time in ten (the clocks' last digit). */
	f->cfg.rx_clock_offset_ns |= 1;
	assert_string_equal(f->cfg.read_path, f->path);
}

static void add(struct cap_writer *w, const struct fixture *f, uint64_t seq, uint64_t tx_ns,
		unsigned int frame_len, uint32_t caplen)
{
	struct cb_frame_spec spec;
	uint8_t buf[CB_FRAME_MAX];
	int len;

	cb_frame_spec_default(&spec);
	spec.frame_len = frame_len;
	len = cb_frame_build(&spec, buf, sizeof(buf));
	assert_true(len > 0);
	cb_stamp_write(buf, seq, tx_ns);
	cap_writer_add(w, buf, caplen ? caplen : (uint32_t)len, (uint32_t)len,
		       tx_ns + (uint64_t)f->cfg.rx_clock_offset_ns + LATENCY_NS);
}

/* In order, a gap (3), a duplicate (4), a reordered pair (6 before 5), a
 * foreign frame, a 1518 B frame snapped after its stamp (7), one snapped
 * before it (8): 10 records. */
static void write_file(const struct fixture *f)
{
	static const uint64_t seqs[] = { 0, 1, 2, 4, 4, 6, 5 };
	uint8_t foreign[60];
	struct cap_writer w;
	uint64_t t = 1000000000ull;

	assert_int_equal(cap_writer_open(&w, f->path, 262144), 0);
	assert_int_equal(cap_writer_begin(&w), 0);
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++, t += 1000000)
		add(&w, f, seqs[i], t, 64, 0);
	memset(foreign, 0xab, sizeof(foreign));
	cap_writer_add(&w, foreign, sizeof(foreign), sizeof(foreign), t);
	add(&w, f, 7, t += 1000000, 1518, CB_STAMP_OFF + CB_STAMP_LEN);
	add(&w, f, 8, t += 1000000, 64, CB_STAMP_OFF);
	assert_int_equal(cap_writer_close(&w), 0);
}

/* Decode f->path; returns the exit status, the output in f->out. */
static int decode(struct fixture *f)
{
	FILE *out = tmpfile();
	size_t n;
	int status;

	assert_non_null(out);
	status = cap_read_file(&f->cfg, out);
	rewind(out);
	n = fread(f->out, 1, sizeof(f->out) - 1, out);
	f->out[n] = 0;
	fclose(out);
	return status;
}

static void assert_has(const struct fixture *f, const char *text)
{
	if (!strstr(f->out, text))
		fail_msg("%s not in %s", text, f->out);
}

static void check_counts(const struct fixture *f, const char *frames)
{
	assert_has(f, frames);
	assert_has(f, "\"received\":7,");
	assert_has(f, "\"foreign\":2,\"lost\":1,");
	assert_has(f, "\"duplicates\":1,\"reordered\":1,\"too_old\":0,\"max_seq\":7,\"streams\":1,");
	assert_has(f, "\"cut_before_stamp\":1,\"kernel_drops\":null,\"kernel\":null,\"rx_clock\":\"file\"");
	assert_has(f, "\"lengths\":{\"64\":7,\"1518\":1}");
	/* The records are timed with the decode's own clock offset: exact. */
	assert_has(f, "\"latency_ns\":{\"n\":8,\"min\":1000,\"p50\":1000,");
	assert_has(f, "\"groups\":{\"size\":4,\"received\":[3,4]}");
	assert_has(f, "\"link_type\":\"EN10MB\",\"snaplen\":262144,");
}

/* The same frames as pcap and as pcapng (both with nanosecond times). */
static void test_read_counts(void **state)
{
	static const char *const suffixes[] = { ".pcap", ".pcapng" };

	for (int i = 0; i < 2; i++) {
		struct fixture f;

		configure(&f, suffixes[i]);
		write_file(&f);
		assert_int_equal(decode(&f), CB_EXIT_OK);
		check_counts(&f, "\"file_frames\":10,\"truncated\":false,");
		assert_has(&f, "\"ts_resolution_ns\":1,");
		assert_true(json_valid(f.out));
		unlink(f.path);
	}
}

/* A capture program killed mid-write: the last record is cut short. The
 * frames before it are counted; the summary says so. */
static void test_truncated_last_record(void **state)
{
	static const char *const suffixes[] = { ".pcap", ".pcapng" };

	for (int i = 0; i < 2; i++) {
		struct fixture f;
		struct stat st;

		configure(&f, suffixes[i]);
		write_file(&f);
		assert_int_equal(stat(f.path, &st), 0);
		assert_int_equal(truncate(f.path, st.st_size - 5), 0);
		assert_int_equal(decode(&f), CB_EXIT_OK);
		assert_has(&f, "\"file_frames\":9,\"truncated\":true,");
		assert_has(&f, "\"received\":7,");
		assert_has(&f, "\"cut_before_stamp\":0,");
		unlink(f.path);
	}
}

/* Not a capture, a capture cut inside its header, no file: exit status 2
 * and nothing on stdout. */
static void test_bad_files(void **state)
{
	struct fixture f;
	FILE *fp;

	configure(&f, ".pcap");
	fp = fopen(f.path, "w");
	assert_non_null(fp);
	fputs("not a capture\n", fp);
	fclose(fp);
	assert_int_equal(decode(&f), CB_EXIT_USAGE);
	assert_string_equal(f.out, "");
	write_file(&f);
	assert_int_equal(truncate(f.path, 10), 0);
	assert_int_equal(decode(&f), CB_EXIT_USAGE);
	unlink(f.path);
	assert_int_equal(decode(&f), CB_EXIT_USAGE);
	assert_string_equal(f.out, "");
}

/* --read with an option of a capture: one line, exit status 2. */
static void test_capture_options_refused(void **state)
{
	static const char *const named[] = { "--iface", "--backend", "--write", "--count" };
	static const char *const with[][5] = {
		{ "--read", "x.pcap", "--iface", "lo", NULL },
		{ "--read", "x.pcap", "--backend", "pcap", NULL },
		{ "--read", "x.pcap", "--write", "y.pcap", NULL },
		{ "--count", "5", "--read", "x.pcap", NULL },
	};
	static struct run_result r;

	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++) {
		run_cap(with[i], &r);
		assert_int_equal(r.status, CB_EXIT_USAGE);
		assert_non_null(strstr(r.err, "--read decodes a file"));
		const char *nl = strchr(r.err, '\n');

		assert_non_null(strstr(r.err, named[i]));
		assert_true(nl && !nl[1]); /* one line */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_counts),
		cmocka_unit_test(test_truncated_last_record),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_capture_options_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
