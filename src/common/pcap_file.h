/* SPDX-License-Identifier: MIT */
/* Opening a capture file that capbench reads (trace: profiles, --replay). */
#ifndef CAPBENCH_PCAP_FILE_H
#define CAPBENCH_PCAP_FILE_H

#include <pcap/pcap.h>
#include <stddef.h>

/* Open a pcap or pcapng file of Ethernet frames with nanosecond timestamps
 * (libpcap scales microsecond files). On failure returns NULL with one line
 * in err that starts with `what` (e.g. "--replay FILE"). */
pcap_t *cb_pcap_open_ethernet(const char *path, const char *what, char *err, size_t errlen);

#endif
