/* SPDX-License-Identifier: MIT */
/* PACKET_STATISTICS of an AF_PACKET socket as 64-bit running totals. */
#ifndef CAPBENCH_PACKET_STATS_H
#define CAPBENCH_PACKET_STATS_H

#include "cap.h"

/* Read the socket's statistics and add them to *acc. The kernel resets its
 * (32-bit) counters on every read, so the running total is ours to keep;
 * capbench-cap reads them every second (cap.c, CAP_STATS_EVERY_NS), which
 * keeps them from wrapping at any link rate.
 * `tpacket_v3` selects struct tpacket_stats_v3 (with tp_freeze_q_cnt).
 * Returns 0 or -errno. Only one thread may call it for a socket. */
int packet_stats_accumulate(int fd, int tpacket_v3, struct cap_kstats *acc);

#endif
