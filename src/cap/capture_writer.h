/* SPDX-License-Identifier: MIT */
/*
 * --write FILE.pcap | FILE.pcapng: the captured frames, with their receive
 * times, in a file tcpdump and tshark read.
 *
 * The worker appends each record to a block buffer (1 MiB) and hands a full
 * block to write() in one call, so the ring loop pays a copy per packet and
 * a system call per block, what the data volume demands and no more.
 * Timestamps are nanoseconds of CLOCK_REALTIME: pcap with the nanosecond
 * magic (0xa1b23c4d), pcapng with if_tsresol 9.
 */
#ifndef CAPBENCH_CAPTURE_WRITER_H
#define CAPBENCH_CAPTURE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#define CAP_WRITER_BLOCK (1u << 20)

struct cap_writer {
	int fd;
	int pcapng;
	uint32_t snaplen;
	uint8_t *buf;
	size_t len;
	uint64_t records, bytes_written;
	int err;              /* the first write error (-errno): later records are dropped */
	int created;          /* the file did not exist before cap_writer_open() */
	const char *path;
};

/* Open the file for writing (pcapng if the name ends in .pcapng, else pcap)
 * and buffer its header, leaving an existing file's contents as they are:
 * the capture may still fail to open. Returns 0 or -errno with one line on
 * stderr. Then exactly one of cap_writer_begin() (the capture started) or
 * cap_writer_abandon() (it did not). */
int cap_writer_open(struct cap_writer *w, const char *path, uint32_t snaplen);
/* Whether `path` could be written, without creating or touching it (--check):
 * an existing regular file we may write, or a new name in a directory we may
 * write. 0, or a negative errno with one line in err (an empty name, a
 * device, FIFO or directory, no permission). */
int cap_writer_probe(const char *path, char *err, size_t errlen);
/* The capture opened: truncate an existing file, so the records replace its
 * contents. Returns 0 or -errno with one line on stderr. */
int cap_writer_begin(struct cap_writer *w);
/* The capture never started: close, and remove the file only if
 * cap_writer_open() created it; a file the user had is left untouched. */
void cap_writer_abandon(struct cap_writer *w);
/* One frame of wirelen bytes of which caplen are in data, received at
 * ts_ns (CLOCK_REALTIME). */
void cap_writer_add(struct cap_writer *w, const uint8_t *data, uint32_t caplen, uint32_t wirelen,
		    uint64_t ts_ns);
/* Write what is buffered and close; returns 0 or the first error. */
int cap_writer_close(struct cap_writer *w);

#endif
