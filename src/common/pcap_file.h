/* SPDX-License-Identifier: MIT */
/* Reading a capture file that capbench reads (trace: profiles, --replay). */
#ifndef CAPBENCH_PCAP_FILE_H
#define CAPBENCH_PCAP_FILE_H

#include <pcap/pcap.h>
#include <stddef.h>
#include <stdint.h>

/* The largest capture file capbench reads: 4 GiB. --replay keeps at most
 * 1 GiB of frames in memory, which a pcapng file of minimal frames holds in
 * about 1.6 GiB; a trace: profile reads far fewer frames than that to learn
 * a length distribution. */
#define CB_PCAP_FILE_MAX (4ull << 30)

/* capbench-cap --read streams its file (one record in memory at a time),
 * so it takes larger captures: 1 TiB, a bound only against a file whose
 * size says nothing. */
#define CB_PCAP_READ_MAX (1ull << 40)

/* Open a pcap or pcapng file of Ethernet frames with nanosecond timestamps
 * (libpcap scales microsecond files). The path must name a regular file of
 * at most max_bytes (cb_open_regular). On failure returns NULL with one line
 * in err that starts with `what` (e.g. "--replay FILE") and names the fix. */
pcap_t *cb_pcap_open_file(const char *path, const char *what, uint64_t max_bytes, char *err,
			  size_t errlen);
/* The same, of at most CB_PCAP_FILE_MAX bytes. */
pcap_t *cb_pcap_open_ethernet(const char *path, const char *what, char *err, size_t errlen);

/* The next record: 1 with *h and *data set, 0 at the end of the file, or
 * a negative errno with one line in err naming `what` and the record's
 * number (`frame`, counted from 1): -ENODATA for a last record cut short by
 * the end of the file (what a capture program killed mid-write leaves),
 * -EINVAL for a damaged one, -EIO for a read error. libpcap checks the file's structure (block
 * lengths, a captured length above the file's snapshot length or the link
 * type's maximum, a record cut short) and we check what it hands over as
 * read: a record that claims more captured bytes than its frame had. */
int cb_pcap_next(pcap_t *pc, const char *what, uint64_t frame, struct pcap_pkthdr **h,
		 const u_char **data, char *err, size_t errlen);

#endif
