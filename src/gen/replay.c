/* SPDX-License-Identifier: MIT */
#include "replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_file.h"
#include "stamp.h"
#include "util.h"

/* All frames stay in memory so the send loop never reads the file. */
#define REPLAY_MAX_BYTES (1ull << 30)
#define MIN_BUF_LEN (CB_FRAME_MIN - CB_FCS_LEN)
#define SPAN_MAX_NS ((uint64_t)(CB_SECONDS_MAX * 1e9))

static int grow(struct gen_replay *r, uint32_t *cap, uint64_t *buf_cap, uint64_t need)
{
	if (r->n == *cap) {
		uint32_t ncap = *cap ? *cap * 2 : 1024;
		uint64_t *off = realloc(r->off, ncap * sizeof(*off));
		uint32_t *len;
		uint64_t *gap;

		if (!off)
			return -ENOMEM;
		r->off = off;
		len = realloc(r->len, ncap * sizeof(*len));
		if (!len)
			return -ENOMEM;
		r->len = len;
		gap = realloc(r->gap_ns, ncap * sizeof(*gap));
		if (!gap)
			return -ENOMEM;
		r->gap_ns = gap;
		*cap = ncap;
	}
	if (need > *buf_cap) {
		uint64_t ncap = *buf_cap ? *buf_cap * 2 : 1 << 20;
		uint8_t *buf;

		while (ncap < need)
			ncap *= 2;
		buf = realloc(r->buf, ncap);
		if (!buf)
			return -ENOMEM;
		r->buf = buf;
		*buf_cap = ncap;
	}
	return 0;
}

int gen_replay_load(const char *path, unsigned int max_buf_len, struct gen_replay *r, char *err,
		    size_t errlen)
{
	char what[512];
	struct pcap_pkthdr *h;
	const u_char *data;
	uint64_t used = 0, buf_cap = 0, prev_ns = 0, span_ns = 0;
	uint32_t cap = 0;
	pcap_t *pc;
	int rc = 0, nx;

	memset(r, 0, sizeof(*r));
	snprintf(what, sizeof(what), "--replay %s", path);
	pc = cb_pcap_open_ethernet(path, what, err, errlen);
	if (!pc)
		return -EINVAL;
	while ((nx = cb_pcap_next(pc, what, (uint64_t)r->n + 1, &h, &data, err, errlen)) == 1) {
		uint32_t len = h->len < MIN_BUF_LEN ? MIN_BUF_LEN : h->len;
		uint64_t t, gap;

		/* Nanoseconds since the epoch fit 64 bits until 2554; a later (or
		 * negative) time is a damaged record, and would wrap below (libpcap
		 * hands a file's fraction over unchecked: up to 2^32 - 1 "ns"). */
		if (h->ts.tv_sec < 0 || (uint64_t)h->ts.tv_sec > UINT64_MAX / 1000000000ull - 5) {
			snprintf(err, errlen, "--replay %s: frame %u has the time %lld s, out of range: "
				 "the capture is damaged", path, r->n + 1, (long long)h->ts.tv_sec);
			rc = -EINVAL;
			goto fail;
		}
		t = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;
		/* --rate original waits the capture's gaps, in 1/65536 ns (pacing.h):
		 * they may add up to a day at most, like any run (span_ns <=
		 * SPAN_MAX_NS throughout, so the subtraction cannot wrap). */
		gap = r->n && t > prev_ns ? t - prev_ns : 0;
		if (gap > SPAN_MAX_NS - span_ns) {
			snprintf(err, errlen, "--replay %s: at frame %u the capture's gaps add up to more "
				 "than %.0f s (a day): replay a shorter capture", path, r->n + 1,
				 CB_SECONDS_MAX);
			rc = -ERANGE;
			goto fail;
		}
		span_ns += gap;
		if (h->caplen < h->len) {
			snprintf(err, errlen, "--replay %s: frame %u was captured with %u of its %u "
				 "bytes: replay needs whole frames (capture with a larger snaplen)",
				 path, r->n + 1, h->caplen, h->len);
			rc = -EINVAL;
			goto fail;
		}
		if (len > max_buf_len) {
			snprintf(err, errlen, "--replay %s: frame %u is %u B long (%u B with FCS), "
				 "above the interface's MTU + 18 = %u B", path, r->n + 1, h->len,
				 h->len + CB_FCS_LEN, max_buf_len + CB_FCS_LEN);
			rc = -ERANGE;
			goto fail;
		}
		if (used + len > REPLAY_MAX_BYTES) {
			snprintf(err, errlen, "--replay %s holds more than %llu MiB of frames: replay "
				 "a shorter capture", path, REPLAY_MAX_BYTES >> 20);
			rc = -EFBIG;
			goto fail;
		}
		rc = grow(r, &cap, &buf_cap, used + len);
		if (rc)
			goto fail;
		memcpy(r->buf + used, data, h->caplen);
		memset(r->buf + used + h->caplen, 0, len - h->caplen); /* Ethernet padding */
		r->off[r->n] = used;
		r->len[r->n] = len;
		if (r->n)
			r->gap_ns[r->n - 1] = gap;
		prev_ns = t;
		used += len;
		r->n++;
	}
	if (nx < 0) {
		rc = nx;
		goto fail;
	}
	if (!r->n) {
		snprintf(err, errlen, "--replay %s holds no frames", path);
		rc = -EINVAL;
		goto fail;
	}
	/* The mean of the gaps waited (a capture's clock may step back). */
	r->gap_ns[r->n - 1] = r->n > 1 ? span_ns / (r->n - 1) : 0;
	pcap_close(pc);
	return 0;

fail:
	pcap_close(pc);
	gen_replay_free(r);
	return rc;
}

void gen_replay_free(struct gen_replay *r)
{
	free(r->buf);
	free(r->off);
	free(r->len);
	free(r->gap_ns);
	memset(r, 0, sizeof(*r));
}
