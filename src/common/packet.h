/* SPDX-License-Identifier: MIT */
/* Building and recognising capbench test frames (layout in stamp.h). */
#ifndef CAPBENCH_PACKET_H
#define CAPBENCH_PACKET_H

#include <stddef.h>
#include <stdint.h>

#include "stamp.h"

struct cb_frame_spec {
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	uint32_t src_ip;      /* host byte order */
	uint32_t dst_ip;      /* host byte order */
	uint8_t stream;       /* UDP source port = CB_UDP_SRC_PORT_BASE + stream */
	unsigned int frame_len; /* RFC 2544 frame length, including the 4 B FCS */
};

/* Defaults: 198.18.0.1 -> 198.18.0.2 (RFC 2544's benchmarking range), a
 * locally administered destination MAC that matches no host, so a receiving
 * stack treats the frames as PACKET_OTHERHOST (as on a monitoring port) and
 * the IP layer drops them early while packet sockets still see them. */
void cb_frame_spec_default(struct cb_frame_spec *s);

/* Write the frame (frame_len - 4 bytes, no FCS: the NIC or veth adds none)
 * into buf with a zero stamp. Returns the buffer length or -EINVAL /
 * -ENOSPC. The UDP checksum is 0 ("none", allowed for IPv4) because the
 * stamp changes in every frame. */
int cb_frame_build(const struct cb_frame_spec *s, uint8_t *buf, size_t buflen);

/* Shorten (or restore) a built frame to frame_len bytes incl. FCS: rewrites
 * the IP total length, the IP checksum and the UDP length. The caller sends
 * frame_len - 4 bytes of the buffer. */
void cb_frame_set_len(uint8_t *frame, unsigned int frame_len);

/* Internet checksum (RFC 1071) of len bytes, folded, in network byte order. */
uint16_t cb_inet_csum(const void *data, size_t len);

/* Write seq and tx_ns into a built frame's stamp. */
void cb_stamp_write(uint8_t *frame, uint64_t seq, uint64_t tx_ns);

/* Write a trailer stamp (stamp.h) into a built frame: the stream's last
 * sequence number and its sent count. */
void cb_trailer_write(uint8_t *frame, uint64_t last_seq, uint64_t sent);

/* The magic of a capbench-shaped frame (IPv4 without options, UDP to
 * CB_UDP_DST_PORT, long enough for the stamp), else 0; the stream id into
 * *stream. */
static inline unsigned int cb_stamp_magic(const uint8_t *f, size_t len, unsigned int *stream)
{
	if (len < CB_STAMP_OFF + CB_STAMP_LEN)
		return 0;
	if (f[12] != 0x08 || f[13] != 0x00)           /* EtherType IPv4 */
		return 0;
	if (f[14] != 0x45 || f[23] != 17)            /* IHL 5, UDP */
		return 0;
	if (((unsigned)f[36] << 8 | f[37]) != CB_UDP_DST_PORT)
		return 0;
	*stream = (uint8_t)(((unsigned)f[34] << 8 | f[35]) - CB_UDP_SRC_PORT_BASE);
	return f[CB_STAMP_OFF] | (unsigned)f[CB_STAMP_OFF + 1] << 8;
}

/* The stamp of a capbench-shaped frame: its magic (CB_STAMP_MAGIC for a data
 * frame, CB_TRAILER_MAGIC for a trailer, anything else for a foreign frame,
 * 0 for one not capbench-shaped) and, for the two of ours, its two fields:
 * seq and tx_ns of a data frame, last_seq and sent of a trailer (stamp.h). */
static inline unsigned int cb_stamp_read(const uint8_t *f, size_t len, uint64_t *a, uint64_t *b,
					 unsigned int *stream)
{
	unsigned int magic = cb_stamp_magic(f, len, stream);

	if (magic == CB_STAMP_MAGIC || magic == CB_TRAILER_MAGIC) {
		__builtin_memcpy(a, f + CB_STAMP_OFF + 2, 8);
		__builtin_memcpy(b, f + CB_STAMP_OFF + 10, 8);
	}
	return magic;
}

/* A capbench data frame: returns 1 and its fields, 0 for any other frame. */
static inline int cb_stamp_parse(const uint8_t *f, size_t len, uint64_t *seq, uint64_t *tx_ns,
				 unsigned int *stream)
{
	return cb_stamp_read(f, len, seq, tx_ns, stream) == CB_STAMP_MAGIC;
}

/* A trailer frame (stamp.h): returns 1 and its fields, 0 for any other frame. */
static inline int cb_trailer_parse(const uint8_t *f, size_t len, uint64_t *last_seq,
				   uint64_t *sent, unsigned int *stream)
{
	return cb_stamp_read(f, len, last_seq, sent, stream) == CB_TRAILER_MAGIC;
}

#endif
