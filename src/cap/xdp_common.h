/* SPDX-License-Identifier: MIT */
/* What the two backends with their own XDP program (afxdp, xdp) share. */
#ifndef CAPBENCH_CAP_XDP_COMMON_H
#define CAPBENCH_CAP_XDP_COMMON_H

#include "cap.h"

/* What ties a backend's XDP program to the interface. */
struct cap_xdp_hook {
	int link_fd;      /* the bpf_link; closing it detaches the program; -1 = none */
	int promisc_fd;   /* see cap_xdp_hook_init; -1 = none (--no-promisc) */
	const char *mode; /* "native" or "generic", once attached */
};

/* Keep cfg->iface promiscuous while the hook is held (unless --no-promisc).
 * An XDP program sees what the NIC accepts, and a NIC filters frames for
 * other MAC addresses unless it is promiscuous, as a capture needs. The
 * membership of an AF_PACKET socket that receives nothing (protocol 0) does
 * that, and the kernel undoes it when the socket closes, however the process
 * ends. Returns 0 or -errno after printing one line. */
int cap_xdp_hook_init(const struct cap_cfg *cfg, struct cap_xdp_hook *h);

/* Attach an XDP program to cfg->iface (native mode where the driver has it)
 * through a bpf_link. Returns 0 or -errno after printing one line. */
int cap_xdp_hook_attach(const struct cap_cfg *cfg, struct cap_xdp_hook *h, int prog_fd);

/* A BPF skeleton that did not load (err: -errno): one line naming `what`,
 * and err. Without CAP_BPF/CAP_SYS_ADMIN (EPERM) the user's to fix (exit
 * status 2: run as root); the verifier's or the kernel's refusal is a
 * failure. */
int cap_bpf_load_failed(int err, const char *what);

/* Detach the program, then let the interface leave promiscuous mode. */
void cap_xdp_hook_release(struct cap_xdp_hook *h);

/* Receive queues of `iface` from sysfs (/sys/class/net/IF/queues/rx-N),
 * 0 if sysfs does not say (not mounted for this namespace). */
unsigned int cap_rx_queue_count(const char *iface);

/* Load the program's counters (a "counts" map, xdp_counts.h) into the
 * has_xdp fields of *k. Returns 0 or -errno. */
int cap_xdp_kstats(int counts_map_fd, struct cap_kstats *k);

#endif
