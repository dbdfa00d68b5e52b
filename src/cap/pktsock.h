/* SPDX-License-Identifier: MIT */
/*
 * Setting up an AF_PACKET socket, shared by the raw, afp-v2, afp-v3 and
 * fanout backends. Each function prints one error line naming the problem
 * and the fix, and returns 0 / a descriptor or -errno; a problem the user
 * can fix is printed with cb_user_fault() (util.h: exit status 2).
 */
#ifndef CAPBENCH_PKTSOCK_H
#define CAPBENCH_PKTSOCK_H

#include <stddef.h>
#include <sys/socket.h>

#include "cap.h"

/* A SOCK_RAW packet socket with protocol 0, which receives nothing until
 * pktsock_bind(): no frame of another interface slips in while the socket
 * is being set up. `version` is TPACKET_V2 or TPACKET_V3 for a ring
 * (PACKET_VERSION must be set before PACKET_RX_RING), or -1 for none.
 * cfg->filter, if any, is attached (SO_ATTACH_FILTER). Returns the
 * descriptor or -errno. */
int pktsock_open(const struct cap_cfg *cfg, int version);

/* A packet socket with a receive ring, bound to cfg->iface: pktsock_open(),
 * PACKET_RX_RING with `req` (struct tpacket_req or tpacket_req3), the
 * ring's ring_len bytes mapped, pktsock_bind(). `geometry` describes the
 * ring for the error line if the kernel refuses it ("4 blocks of 64 KiB")
 * and `fix` says what to change. On success *fd and *ring are set. */
int pktsock_open_ring(const struct cap_cfg *cfg, int version, const void *req, socklen_t req_len,
		      size_t ring_len, const char *geometry, const char *fix, int *fd, void **ring);

/* Bind to cfg->ifindex for every protocol (ETH_P_ALL), and make the
 * interface promiscuous if cfg->promisc (the kernel counts promiscuity per
 * socket and drops it when the socket closes). */
int pktsock_bind(int fd, const struct cap_cfg *cfg);

#endif
