/* SPDX-License-Identifier: MIT */
/*
 * --replay FILE.pcap: the frames of a capture, sent as they are (afpacket
 * engine). They carry no capbench stamp: the counter counts them as foreign
 * frames and a trial compares counts instead of sequence numbers.
 */
#ifndef CAPBENCH_REPLAY_H
#define CAPBENCH_REPLAY_H

#include <stddef.h>
#include <stdint.h>

struct gen_replay {
	uint32_t n;
	uint8_t *buf;        /* every frame, back to back */
	uint64_t *off;       /* frame i starts at buf + off[i] */
	uint32_t *len;       /* its length without FCS, padded to the 60 B minimum */
	uint64_t *gap_ns;    /* the capture's gap to the next frame; the last one's is
			      * the mean gap, for --loop */
};

/* Load a pcap or pcapng capture of Ethernet frames. Frames must be whole
 * (captured length = length) and at most max_buf_len bytes (the MTU + 14).
 * Returns 0, or -errno with one line in err naming the file and frame. */
int gen_replay_load(const char *path, unsigned int max_buf_len, struct gen_replay *r, char *err,
		    size_t errlen);
void gen_replay_free(struct gen_replay *r);

#endif
