/* SPDX-License-Identifier: MIT */
#include "replay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_file.h"
#include "stamp.h"

/* All frames stay in memory so the send loop never reads the file. */
#define REPLAY_MAX_BYTES (1ull << 30)
#define MIN_BUF_LEN (CB_FRAME_MIN - CB_FCS_LEN)

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
	uint64_t used = 0, buf_cap = 0, prev_ns = 0, first_ns = 0;
	uint32_t cap = 0;
	pcap_t *pc;
	int rc = 0, nx;

	memset(r, 0, sizeof(*r));
	snprintf(what, sizeof(what), "--replay %s", path);
	pc = cb_pcap_open_ethernet(path, what, err, errlen);
	if (!pc)
		return -EINVAL;
	while ((nx = pcap_next_ex(pc, &h, &data)) == 1) {
		uint32_t len = h->len < MIN_BUF_LEN ? MIN_BUF_LEN : h->len;
		uint64_t t = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec;

		/* libpcap hands the record header over as read: a damaged or hostile file may
		 * claim more captured bytes than the frame had, which would overrun the
		 * frame's buffer below. */
		if (h->caplen > h->len) {
			snprintf(err, errlen, "--replay %s: frame %u claims %u captured bytes of a %u-byte "
				 "frame: the capture is damaged (check it with capinfos)",
				 path, r->n + 1, h->caplen, h->len);
			rc = -EINVAL;
			goto fail;
		}
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
			r->gap_ns[r->n - 1] = t > prev_ns ? t - prev_ns : 0;
		else
			first_ns = t;
		prev_ns = t;
		used += len;
		r->n++;
	}
	if (nx == PCAP_ERROR) {
		snprintf(err, errlen, "--replay %s: unreadable after frame %u (%s): the capture is "
			 "truncated or damaged", path, r->n, pcap_geterr(pc));
		rc = -EINVAL;
		goto fail;
	}
	if (!r->n) {
		snprintf(err, errlen, "--replay %s holds no frames", path);
		rc = -EINVAL;
		goto fail;
	}
	r->gap_ns[r->n - 1] = r->n > 1 ? (prev_ns - first_ns) / (r->n - 1) : 0;
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
