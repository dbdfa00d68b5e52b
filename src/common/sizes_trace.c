/* SPDX-License-Identifier: MIT */
/*
 * --size trace:FILE.pcap: learn the frame-length distribution of a capture.
 * libpcap reads pcap and pcapng alike. A record's `len` is the frame's length
 * on the wire without its FCS (Linux captures never hold the FCS), so the
 * RFC 2544 length is len + 4; frames a capture saw below the Ethernet minimum
 * (a host's own outgoing ARP, before padding) count as 64 B, the length they
 * had on the wire.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_file.h"
#include "sizes.h"
#include "stamp.h"

int cb_sizes_from_pcap(const char *path, struct cb_size_profile *p, char *err, size_t errlen)
{
	char what[512];
	struct pcap_pkthdr *hdr;
	const u_char *data;
	uint64_t *hist, frames = 0;
	unsigned int *lens = NULL, n = 0;
	double *weights = NULL;
	pcap_t *pc;
	int r, rc = 0;

	snprintf(what, sizeof(what), "--size trace:%s", path);
	pc = cb_pcap_open_ethernet(path, what, err, errlen);
	if (!pc)
		return -EINVAL;
	hist = calloc(CB_FRAME_MAX + 1, sizeof(*hist));
	if (!hist) {
		pcap_close(pc);
		return -ENOMEM;
	}
	while ((r = cb_pcap_next(pc, what, frames + 1, &hdr, &data, err, errlen)) == 1) {
		uint64_t len = (uint64_t)hdr->len + CB_FCS_LEN;

		frames++;
		if (len < CB_FRAME_MIN)
			len = CB_FRAME_MIN;
		if (len > CB_FRAME_MAX) {
			snprintf(err, errlen, "%s: frame %llu is %llu B long, above %d B: capbench "
				 "sends Ethernet frames up to MTU + 18", what,
				 (unsigned long long)frames, (unsigned long long)len, CB_FRAME_MAX);
			rc = -ERANGE;
			goto out;
		}
		hist[len]++;
	}
	if (r < 0) {
		rc = r;
		goto out;
	}
	if (!frames) {
		snprintf(err, errlen, "%s holds no frames: give a capture with traffic", what);
		rc = -EINVAL;
		goto out;
	}
	lens = malloc((CB_FRAME_MAX + 1) * sizeof(*lens));
	weights = malloc((CB_FRAME_MAX + 1) * sizeof(*weights));
	if (!lens || !weights) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned int len = CB_FRAME_MIN; len <= CB_FRAME_MAX; len++) {
		if (hist[len]) {
			lens[n] = len;
			weights[n++] = (double)hist[len];
		}
	}
	rc = cb_sizes_weighted(p, lens, weights, n);
out:
	free(lens);
	free(weights);
	free(hist);
	pcap_close(pc);
	return rc;
}
