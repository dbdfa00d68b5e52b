/* SPDX-License-Identifier: MIT */
#include "packet.h"

#include <errno.h>
#include <string.h>

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v & 0xff; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v & 0xffff); }

void cb_frame_spec_default(struct cb_frame_spec *s)
{
	static const uint8_t dst[6] = { 0x02, 0xcb, 0x00, 0x00, 0x00, 0x02 };
	static const uint8_t src[6] = { 0x02, 0xcb, 0x00, 0x00, 0x00, 0x01 };

	memset(s, 0, sizeof(*s));
	memcpy(s->dst_mac, dst, 6);
	memcpy(s->src_mac, src, 6);
	s->src_ip = 0xc6120001; /* 198.18.0.1 */
	s->dst_ip = 0xc6120002; /* 198.18.0.2 */
	s->frame_len = CB_FRAME_MIN;
}

uint16_t cb_inet_csum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)p[0] << 8 | p[1];
	if (len)
		sum += (uint32_t)p[0] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

int cb_frame_build(const struct cb_frame_spec *s, uint8_t *buf, size_t buflen)
{
	size_t len;
	uint8_t *ip, *udp;

	if (s->frame_len < CB_FRAME_MIN || s->frame_len > CB_FRAME_MAX)
		return -EINVAL;
	len = s->frame_len - CB_FCS_LEN;
	if (buflen < len)
		return -ENOSPC;
	memset(buf, 0, len);

	memcpy(buf, s->dst_mac, 6);
	memcpy(buf + 6, s->src_mac, 6);
	put16(buf + 12, 0x0800);

	ip = buf + CB_ETH_HLEN;
	ip[0] = 0x45;                              /* version 4, 20 B header */
	put16(ip + 2, (uint16_t)(len - CB_ETH_HLEN)); /* total length */
	put16(ip + 6, 0x4000);                     /* don't fragment */
	ip[8] = 64;                                /* TTL */
	ip[9] = 17;                                /* UDP */
	put32(ip + 12, s->src_ip);
	put32(ip + 16, s->dst_ip);
	put16(ip + 10, cb_inet_csum(ip, CB_IP_HLEN));

	udp = ip + CB_IP_HLEN;
	put16(udp, (uint16_t)(CB_UDP_SRC_PORT_BASE + s->stream));
	put16(udp + 2, CB_UDP_DST_PORT);
	put16(udp + 4, (uint16_t)(len - CB_ETH_HLEN - CB_IP_HLEN));
	/* udp checksum stays 0: none */

	cb_stamp_write(buf, 0, 0);
	/* Fill the rest of the payload with a recognisable pattern. */
	for (size_t i = CB_STAMP_OFF + CB_STAMP_LEN; i < len; i++)
		buf[i] = (uint8_t)i;
	return (int)len;
}

void cb_frame_set_len(uint8_t *frame, unsigned int frame_len)
{
	uint8_t *ip = frame + CB_ETH_HLEN;
	unsigned int len = frame_len - CB_FCS_LEN;

	put16(ip + 2, (uint16_t)(len - CB_ETH_HLEN));
	put16(ip + 10, 0);
	put16(ip + 10, cb_inet_csum(ip, CB_IP_HLEN));
	put16(ip + CB_IP_HLEN + 4, (uint16_t)(len - CB_ETH_HLEN - CB_IP_HLEN));
}

void cb_stamp_write(uint8_t *frame, uint64_t seq, uint64_t tx_ns)
{
	uint8_t *st = frame + CB_STAMP_OFF;

	st[0] = CB_STAMP_MAGIC & 0xff;
	st[1] = CB_STAMP_MAGIC >> 8;
	memcpy(st + 2, &seq, 8);   /* little-endian host */
	memcpy(st + 10, &tx_ns, 8);
}

void cb_trailer_write(uint8_t *frame, uint64_t last_seq, uint64_t sent)
{
	cb_stamp_write(frame, last_seq, sent);
	frame[CB_STAMP_OFF] = CB_TRAILER_MAGIC & 0xff;
}
