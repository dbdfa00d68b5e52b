/* SPDX-License-Identifier: MIT */
#include "pcap_file.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "util.h"

pcap_t *cb_pcap_open_ethernet(const char *path, const char *what, char *err, size_t errlen)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	int fd = cb_open_regular(path, what, CB_PCAP_FILE_MAX, err, errlen);
	FILE *f;
	pcap_t *pc;

	if (fd < 0)
		return NULL;
	f = fdopen(fd, "rb");
	if (!f) {
		snprintf(err, errlen, "cannot read %s: out of memory", what);
		close(fd);
		return NULL;
	}
	/* libpcap closes f with pcap_close(), but not when it fails here. */
	pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, ebuf);
	if (!pc) {
		snprintf(err, errlen, "cannot read %s: %s", what, ebuf);
		fclose(f);
		return NULL;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		snprintf(err, errlen, "%s: link type %s is not supported: give a capture of Ethernet "
			 "frames (DLT_EN10MB)", what,
			 pcap_datalink_val_to_name(pcap_datalink(pc)) ?: "unknown");
		pcap_close(pc);
		return NULL;
	}
	return pc;
}

int cb_pcap_next(pcap_t *pc, const char *what, uint64_t frame, struct pcap_pkthdr **h,
		 const u_char **data, char *err, size_t errlen)
{
	int r = pcap_next_ex(pc, h, data);

	if (r == PCAP_ERROR_BREAK)
		return 0;
	if (r != 1) {
		/* libpcap says "truncated dump file" for a record cut short. */
		snprintf(err, errlen, "%s: unreadable after frame %llu (%s): the capture is "
			 "truncated or damaged", what, (unsigned long long)frame - 1,
			 pcap_geterr(pc));
		return -EINVAL;
	}
	if ((*h)->caplen > (*h)->len) {
		snprintf(err, errlen, "%s: frame %llu claims %u captured bytes of a %u-byte frame: "
			 "the capture is damaged (check it with capinfos)", what,
			 (unsigned long long)frame, (*h)->caplen, (*h)->len);
		return -EINVAL;
	}
	return 1;
}
