/* SPDX-License-Identifier: MIT */
#include "pcap_file.h"

#include <stdio.h>

pcap_t *cb_pcap_open_ethernet(const char *path, const char *what, char *err, size_t errlen)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	pcap_t *pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, ebuf);

	if (!pc) {
		snprintf(err, errlen, "cannot read %s: %s", what, ebuf);
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
