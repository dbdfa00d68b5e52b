/* SPDX-License-Identifier: MIT */
#include "packet_stats.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <string.h>
#include <sys/socket.h>

int packet_stats_accumulate(int fd, int tpacket_v3, struct cap_kstats *acc)
{
	struct tpacket_stats_v3 st;
	socklen_t len = tpacket_v3 ? sizeof(struct tpacket_stats_v3) : sizeof(struct tpacket_stats);

	memset(&st, 0, sizeof(st));
	if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
		return -errno;
	/* tp_packets counts every frame the socket was offered: the kernel
	 * adds tp_drops to it before it answers. */
	acc->packets += st.tp_packets;
	acc->drops += st.tp_drops;
	if (tpacket_v3) {
		acc->freeze_q += st.tp_freeze_q_cnt;
		acc->has_freeze_q = 1;
	}
	return 0;
}
