/* SPDX-License-Identifier: MIT */
/*
 * The dpdk backend's EAL command line and port devargs, built from
 * capbench-cap's configuration (no DPDK here, so the unit tests and a
 * build without DPDK have it too).
 */
#ifndef CAPBENCH_CAP_DPDK_EAL_H
#define CAPBENCH_CAP_DPDK_EAL_H

#include <stddef.h>

#include "cap.h"

/* --dpdk-driver: the virtual device opened on --iface. */
enum cap_dpdk_driver { CAP_DPDK_AF_XDP, CAP_DPDK_AF_PACKET };

/* EAL's memory for a capture on virtual devices: the mbuf pool and rings
 * fit in 256 MiB of ordinary pages (--no-huge). */
#define CAP_DPDK_EAL_MB 256
#define CAP_DPDK_MAX_ARGS 64
/* EAL's --file-prefix: this and the pid, one runtime directory each. */
#define CAP_DPDK_PREFIX "capbench-"
/* RX descriptors per queue (--ring-size), net_af_packet's ring frames too:
 * net_af_xdp's own default (XSK_RING_CONS__DEFAULT_NUM_DESCS). */
#define CAP_DPDK_DEFAULT_RING 2048u

struct cap_dpdk_args {
	int argc;
	char *argv[CAP_DPDK_MAX_ARGS + 1]; /* NULL-terminated; the strings live in buf */
	char buf[4096];
	size_t used;
};

/* The port's devargs: --dpdk-devargs as given, else the --dpdk-driver
 * virtual device on cfg->iface with cfg's queues; xdp_prog (net_af_xdp
 * only, may be NULL) is the path of the program it attaches. Returns 0, or
 * -EINVAL with the reason in why (the queues are not consecutive). */
int cap_dpdk_devargs(const struct cap_cfg *cfg, const char *xdp_prog, char *out, size_t len,
		     char *why, size_t whylen);

/* Whether devargs name a PCI device (DDDD:BB:DD.F or BB:DD.F, options after
 * a comma), which EAL takes with -a, not --vdev. */
int cap_dpdk_is_pci(const char *devargs);

/* Where the kernel lists its hugepage pools, one hugepages-SIZEkB
 * directory each with nr_hugepages and free_hugepages. */
#define CAP_DPDK_HUGEPAGES_DIR "/sys/kernel/mm/hugepages"

/* The MiB of hugepages free now in the pools under dir (all sizes); -errno
 * when dir cannot be read (no hugepage support). */
long cap_dpdk_free_huge_mb(const char *dir);

/* Whether EAL takes hugepages: only for a PCI port (--dpdk-devargs with a
 * PCI address, whose NIC writes the mbufs by DMA; a virtual device's frames
 * are copied by software, so ordinary pages do), and only when free_mb
 * (cap_dpdk_free_huge_mb) holds EAL's memory. Otherwise, for a PCI port,
 * `note` gets the one line that says it falls back to --no-huge and what
 * to do ("" when nothing is to be said). */
int cap_dpdk_use_hugepages(const struct cap_cfg *cfg, long free_mb, char *note, size_t len);

/* EAL's argv: capbench-cap's derived options (CPUs, memory, a file prefix
 * of its own pid, no shared config: --no-huge, or with hugepages
 * --in-memory), the port (devargs), then the --eal words split on blanks.
 * Returns 0, or -E2BIG with the reason in why. */
int cap_dpdk_eal_args(const struct cap_cfg *cfg, const char *devargs, long pid, int hugepages,
		      struct cap_dpdk_args *a, char *why, size_t whylen);

#endif
