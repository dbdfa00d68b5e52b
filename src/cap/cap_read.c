/* SPDX-License-Identifier: MIT */
/*
 * capbench-cap --read FILE: decode a capture file another program wrote
 * (tcpdump, dumpcap, tshark, netsniff-ng: pcap or pcapng) through the same
 * per-packet path a live capture takes, cap_packet(): the same sequence
 * tracker, lengths, groups, inter-arrival and latency. No socket, no
 * thread, no root. The summary is a live capture's with the file in place
 * of the backend (docs/programs.md, "--read").
 *
 * Times. libpcap hands each record's time over as seconds and nanoseconds
 * (PCAP_TSTAMP_PRECISION_NANO: it scales a microsecond file's), the
 * CLOCK_REALTIME of the host that wrote the file. The stamps' tx_ns is
 * CLOCK_MONOTONIC, so the record's time is shifted by the offset between
 * the two clocks, read once when the options are taken, exactly as a live
 * capture shifts the kernel's timestamps (cap_rx_mono_ns). That holds for a
 * file written on this host since its clock last stepped; for any other,
 * the latencies say nothing (and a file older than this boot gives none,
 * see cap_packet()). Inter-arrival times need only the file's own clock.
 */
#include <errno.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <string.h>

#include "cap.h"
#include "pcap_file.h"
#include "util.h"

struct cap_read {
	const struct cap_cfg *cfg;
	char what[PATH_MAX + 16];    /* "--read FILE", for error lines */
	pcap_t *pc;
	struct cap_worker w;
	uint64_t frames;             /* records libpcap handed over, of any kind */
	uint64_t cut_before_stamp;   /* records the snap length cut before the stamp's end */
	uint64_t min_ns, max_ns;     /* the records' earliest and latest file times */
	uint64_t resolution_ns;      /* the largest power of ten dividing every time's ns */
	int truncated;               /* the last record was cut short by the file's end */
	/* --interval: lines by the file's time, from the first record's. */
	uint64_t every_ns, start_ns, prev_tick_ns, next_tick_ns;
	struct cap_published prev;
};

static int read_open(struct cap_read *r, const struct cap_cfg *cfg)
{
	char err[PATH_MAX + 512];

	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
	r->w.cfg = cfg;
	r->resolution_ns = 1000000000ull;
	r->every_ns = (uint64_t)(cfg->interval_s * 1e9);
	snprintf(r->what, sizeof(r->what), "--read %s", cfg->read_path);
	r->pc = cb_pcap_open_file(cfg->read_path, r->what, CB_PCAP_READ_MAX, err, sizeof(err));
	if (!r->pc)
		return cb_user_fault(-EINVAL, "%s", err);
	if (cap_rx_stats_init(&r->w.rx)) {
		fprintf(stderr, "capbench-cap: out of memory\n");
		pcap_close(r->pc);
		return -ENOMEM;
	}
	return 0;
}

static void read_close(struct cap_read *r)
{
	pcap_close(r->pc);
	cb_seqset_free(&r->w.seq);
	cap_rx_stats_free(&r->w.rx);
	app_load_free(&r->w.load);
}

/* --interval S: one line at each multiple of S of the file's time after
 * its first record, with the counts of the records before that time; S
 * without records gives no line of its own (the next line's rates span
 * it). A time that goes backwards waits for the file to catch up. */
static void tick(struct cap_read *r, uint64_t file_ns, FILE *out)
{
	struct cap_published now = { r->w.packets, r->w.bytes, r->w.received, 0 };
	uint64_t at;

	if (!r->every_ns)
		return;
	if (!r->frames) {
		r->start_ns = r->prev_tick_ns = file_ns;
		r->next_tick_ns = file_ns + r->every_ns;
		return;
	}
	if (file_ns < r->next_tick_ns)
		return;
	at = file_ns - (file_ns - r->start_ns) % r->every_ns; /* >= next_tick_ns > start_ns */
	cap_print_interval(out, at, (double)(at - r->start_ns) / 1e9, (double)(at - r->prev_tick_ns) / 1e9,
			   &now, &r->prev);
	r->prev_tick_ns = at;
	r->next_tick_ns = at <= UINT64_MAX - r->every_ns ? at + r->every_ns : UINT64_MAX;
}

/* One record: its time, then the live path (cap_packet). A frame the snap
 * length cut before the stamp's end has no stamp to read, so it counts as
 * foreign, as it would in a live capture with that snap length; one cut
 * after the stamp counts as the capbench frame it is, with its length on
 * the wire (h->len). */
static void read_record(struct cap_read *r, const struct pcap_pkthdr *h, const u_char *data,
			FILE *out)
{
	/* ts.tv_usec holds nanoseconds (PCAP_TSTAMP_PRECISION_NANO). A
	 * damaged pcapng time beyond 2^64 ns wraps: a wrong time, never UB. */
	uint64_t sec = (uint64_t)h->ts.tv_sec, nsec = (uint64_t)h->ts.tv_usec;
	uint64_t file_ns = sec * 1000000000ull + nsec;

	tick(r, file_ns, out);
	if (!r->frames || file_ns < r->min_ns)
		r->min_ns = file_ns;
	if (file_ns > r->max_ns)
		r->max_ns = file_ns;
	while (r->resolution_ns > 1 && nsec % r->resolution_ns)
		r->resolution_ns /= 10;
	if (h->caplen < h->len && h->caplen < CB_STAMP_OFF + CB_STAMP_LEN)
		r->cut_before_stamp++;
	r->frames++;
	cap_packet(&r->w, data, h->caplen, h->len,
		   cap_rx_mono_ns(r->cfg->rx_clock_offset_ns, sec, nsec));
}

/* Every record to the end. A last record cut short (a capture program
 * killed mid-write leaves one) ends the file: what came before is counted
 * and the summary says "truncated". A damaged record is bad input. */
static int read_frames(struct cap_read *r, FILE *out)
{
	char err[PATH_MAX + 512];
	struct pcap_pkthdr *h;
	const u_char *data;
	int rc;

	while ((rc = cb_pcap_next(r->pc, r->what, r->frames + 1, &h, &data, err, sizeof(err))) == 1)
		read_record(r, h, data, out);
	if (rc == -ENODATA) {
		r->truncated = 1;
		fprintf(stderr, "capbench-cap: note: %s; the summary counts the %llu whole frames before "
			"it (\"truncated\": true)\n", err, (unsigned long long)r->frames);
		return 0;
	}
	if (rc == -EIO) {
		fprintf(stderr, "capbench-cap: %s\n", err);
		return rc;
	}
	return rc < 0 ? cb_user_fault(rc, "%s", err) : 0;
}

/* The summary: a live capture's fields (summary.c), with the file in place
 * of the backend; what only a live capture measures (its duration, the
 * kernel's counters) is null. */
static int read_summary(const struct cap_read *r, FILE *out)
{
	const struct cap_worker *w = &r->w;
	const char *link = pcap_datalink_val_to_name(pcap_datalink(r->pc));
	struct cap_totals m;
	struct cb_json j;
	char load[32];
	int rc;

	cap_totals_merge(r->cfg, &w, 1, NULL, &m);
	app_load_format(&r->cfg->load, load, sizeof(load));
	cb_json_begin(&j, "summary");
	cb_json_str(&j, "read", r->cfg->read_path);
	cb_json_str(&j, "link_type", link ? link : "unknown");
	cb_json_i64(&j, "snaplen", pcap_snapshot(r->pc));
	cb_json_u64(&j, "file_frames", r->frames);
	cb_json_bool(&j, "truncated", r->truncated);
	cb_json_double(&j, "span_s", r->frames ? (double)(r->max_ns - r->min_ns) / 1e9 : 0);
	if (r->frames)
		cb_json_u64(&j, "ts_resolution_ns", r->resolution_ns);
	cb_json_str(&j, "app_load", load);
	cb_json_str(&j, "duration_s", NULL);
	cap_put_counts(&j, &m, 1, 0);
	cb_json_u64(&j, "cut_before_stamp", r->cut_before_stamp);
	cb_json_str(&j, "kernel_drops", NULL);
	cb_json_str(&j, "kernel", NULL);
	cap_put_rx(&j, r->cfg, &m, &w->seq, "file");
	if (m.alloc_failures)
		cb_json_u64(&j, "untracked", m.alloc_failures);
	rc = cb_json_end(&j, out);
	if (rc)
		fprintf(stderr, "capbench-cap: cannot print the summary: %s\n", strerror(-rc));
	cap_totals_free(&m);
	return rc;
}

int cap_read_file(const struct cap_cfg *cfg, FILE *out)
{
	struct cap_read r;
	int err = read_open(&r, cfg);

	if (err)
		return err == -ENOMEM ? CB_EXIT_RUNTIME : CB_EXIT_USAGE;
	err = read_frames(&r, out);
	if (!err)
		err = read_summary(&r, out) ? -EIO : 0;
	read_close(&r);
	if (err == -EINVAL)
		return CB_EXIT_USAGE;
	return err ? CB_EXIT_RUNTIME : CB_EXIT_OK;
}
