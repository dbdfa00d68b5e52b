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

/* A capbench data frame: capbench-shaped with CB_STAMP_MAGIC. On success
 * fills the out-values and returns 1; returns 0 for any other frame (a
 * trailer or a foreign one). */
static inline int cb_stamp_parse(const uint8_t *f, size_t len, uint64_t *seq,
				 uint64_t *tx_ns, unsigned int *stream)
{
	if (cb_stamp_magic(f, len, stream) != CB_STAMP_MAGIC)
		return 0;
	__builtin_memcpy(seq, f + CB_STAMP_OFF + 2, 8);
	__builtin_memcpy(tx_ns, f + CB_STAMP_OFF + 10, 8);
	return 1;
}

/* A trailer frame (stamp.h): returns 1 and its fields, else 0. */
static inline int cb_trailer_parse(const uint8_t *f, size_t len, uint64_t *last_seq,
				   uint64_t *sent, unsigned int *stream)
{
	if (cb_stamp_magic(f, len, stream) != CB_TRAILER_MAGIC)
		return 0;
	__builtin_memcpy(last_seq, f + CB_STAMP_OFF + 2, 8);
	__builtin_memcpy(sent, f + CB_STAMP_OFF + 10, 8);
	return 1;
}

#endif
