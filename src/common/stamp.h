/* SPDX-License-Identifier: MIT */
/*
 * The capbench test frame: Ethernet / IPv4 / UDP with a stamp in the first
 * 18 bytes of UDP payload, which is all the payload a 64 B frame carries
 * (64 B incl. 4 B FCS = 60 B in the buffer = 14 eth + 20 ip + 8 udp + 18).
 *
 * Shared by the generator, its BPF program, the counter and the
 * pass-and-count XDP program, so it must stay plain C that clang -target bpf
 * accepts (no libc).
 *
 * Stamp layout (little-endian integers, the byte order of every host capbench
 * runs on; the stamp never has to be read by a foreign tool):
 *
 *   off  len  field
 *     0    2  magic   CB_STAMP_MAGIC, tells capbench frames from foreign ones
 *     2    8  seq     per-stream sequence number, starting at 0
 *    10    8  tx_ns   departure time, CLOCK_MONOTONIC ns (bpf_ktime_get_ns)
 *
 * Trailer frames: after its last frame a stream sends a few frames (capbench-gen
 * --trailer) that say how the stream ended. Their stamp has the same layout
 * with bit 0 of the magic set (CB_TRAILER_MAGIC, the trailer flag), and its
 * two fields mean:
 *
 *     2    8  seq     the stream's last sequence number (0 when it sent none)
 *    10    8  tx_ns   the stream's sent count: frames 0 .. sent - 1 left
 *
 * so a counter that sees one knows the stream's tail: frames after the last
 * one it received count as lost. A trailer is not a data frame: readers that
 * know only CB_STAMP_MAGIC take it for a foreign frame, and capbench's XDP
 * counters do not count it as a capbench frame.
 *
 * The stream id (one per generator thread) is the low byte of the UDP source
 * port: CB_UDP_SRC_PORT_BASE + stream. The UDP destination port is
 * CB_UDP_DST_PORT. A frame is a capbench frame when it is IPv4/UDP to that
 * port and carries the magic.
 */
#ifndef CAPBENCH_STAMP_H
#define CAPBENCH_STAMP_H

#define CB_STAMP_MAGIC        0xCB5Eu
#define CB_TRAILER_FLAG       0x0001u
#define CB_TRAILER_MAGIC      (CB_STAMP_MAGIC | CB_TRAILER_FLAG)
#define CB_UDP_DST_PORT       52190u /* 0xCBDE */
#define CB_UDP_SRC_PORT_BASE  52224u /* 0xCC00, + stream id */

#define CB_ETH_HLEN   14
#define CB_IP_HLEN    20
#define CB_UDP_HLEN   8
#define CB_HDRS_LEN   (CB_ETH_HLEN + CB_IP_HLEN + CB_UDP_HLEN)   /* 42 */
#define CB_STAMP_OFF  CB_HDRS_LEN                                /* 42 */
#define CB_STAMP_LEN  18
#define CB_FCS_LEN    4

/* Frame lengths as RFC 2544 counts them: including the 4 B FCS. */
#define CB_FRAME_MIN  64
#define CB_FRAME_MAX  9018
/* Preamble (7) + SFD (1) + minimum inter-frame gap (12) on the wire. */
#define CB_WIRE_OVERHEAD 20

/* One entry of the generator's departure schedule, shared with the BPF
 * pacer: frame i of a cycle has length `len` (incl. FCS), the next frame is
 * due `gap_fp16` / 65536 ns after it, and `wire_fp16` is its wire time at the
 * link rate (the gap inside a burst). */
struct cb_sched_entry {
	unsigned long long gap_fp16;
	unsigned long long wire_fp16;
	unsigned int len;
	unsigned int pad;
};

struct cb_stamp {
	unsigned short magic;
	unsigned long long seq;
	unsigned long long tx_ns;
} __attribute__((packed));

#endif
