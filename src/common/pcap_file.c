/* SPDX-License-Identifier: MIT */
#include "pcap_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

pcap_t *cb_pcap_open_file(const char *path, const char *what, uint64_t max_bytes, char *err,
			  size_t errlen)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	int fd = cb_open_regular(path, what, max_bytes, err, errlen);
	FILE *f;
	pcap_t *pc;

	if (fd < 0) {
		/* Not a regular file, too large, not the user's to read: the
		 * line names the fix. A path that does not open (ENOENT) gets
		 * one. */
		if (fd != -EINVAL && fd != -EFBIG && fd != -EACCES) {
			size_t n = strlen(err);

			snprintf(err + n, errlen - n, ": give the path of a pcap or pcapng file");
		}
		return NULL;
	}
	f = fdopen(fd, "rb");
	if (!f) {
		snprintf(err, errlen, "cannot read %s: out of memory", what);
		close(fd);
		return NULL;
	}
	/* libpcap closes f with pcap_close(), but not when it fails here. */
	pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, ebuf);
	if (!pc) {
		/* Not a capture ("unknown file format"), or one cut short
		 * inside its header ("truncated dump file"). */
		snprintf(err, errlen, "cannot read %s: %s: give a pcap or pcapng capture", what, ebuf);
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

pcap_t *cb_pcap_open_ethernet(const char *path, const char *what, char *err, size_t errlen)
{
	return cb_pcap_open_file(path, what, CB_PCAP_FILE_MAX, err, errlen);
}

int cb_pcap_next(pcap_t *pc, const char *what, uint64_t frame, struct pcap_pkthdr **h,
		 const u_char **data, char *err, size_t errlen)
{
	int r = pcap_next_ex(pc, h, data);

	if (r == PCAP_ERROR_BREAK)
		return 0;
	if (r != 1 && feof(pcap_file(pc))) {
		/* libpcap's fread() of the record came back short at the end of
		 * the file ("truncated dump file; tried to read N captured bytes,
		 * only got M"): the last record was cut short. A damaged header
		 * (a captured length beyond the snapshot length) is refused
		 * before anything is read, so the end was not reached. */
		snprintf(err, errlen, "%s ends inside frame %llu (%s): the capture was cut short",
			 what, (unsigned long long)frame, pcap_geterr(pc));
		return -ENODATA;
	}
	if (r != 1 && ferror(pcap_file(pc))) {
		/* The disk, not the file: "error reading dump file". */
		snprintf(err, errlen, "cannot read %s after frame %llu: %s", what,
			 (unsigned long long)frame - 1, pcap_geterr(pc));
		return -EIO;
	}
	if (r != 1) {
		snprintf(err, errlen, "%s: unreadable after frame %llu (%s): the capture is "
			 "damaged (check it with capinfos)", what, (unsigned long long)frame - 1,
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
