/* SPDX-License-Identifier: MIT */
#include "dpdk_eal.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int cap_dpdk_is_pci(const char *devargs)
{
	unsigned int dom, bus, dev, fn;
	char end;
	size_t n = strcspn(devargs, ",");
	char id[32];

	if (n >= sizeof(id))
		return 0;
	memcpy(id, devargs, n);
	id[n] = '\0';
	if (sscanf(id, "%4x:%2x:%2x.%1x%c", &dom, &bus, &dev, &fn, &end) == 4)
		return 1;
	return sscanf(id, "%2x:%2x.%1x%c", &bus, &dev, &fn, &end) == 3;
}

int cap_dpdk_devargs(const struct cap_cfg *cfg, const char *xdp_prog, char *out, size_t len,
		     char *why, size_t whylen)
{
	unsigned int first = cfg->queues[0], n = cfg->n_queues ? cfg->n_queues : 1;
	int w;

	if (cfg->dpdk_devargs) {
		w = snprintf(out, len, "%s", cfg->dpdk_devargs);
		goto done;
	}
	/* Both virtual devices take a range of the interface's queues: the
	 * first and how many (net_af_packet: from 0, one socket each in a
	 * fanout group). */
	for (unsigned int i = 1; i < n; i++)
		if (cfg->queues[i] != first + i) {
			snprintf(why, whylen, "--queue: the %s driver takes consecutive receive queues "
				 "(e.g. 0-3), not a list with gaps",
				 cfg->dpdk_driver == CAP_DPDK_AF_XDP ? "net_af_xdp" : "net_af_packet");
			return -EINVAL;
		}
	if (cfg->dpdk_driver == CAP_DPDK_AF_PACKET) {
		if (first != 0) {
			snprintf(why, whylen, "--queue: net_af_packet's queues are its sockets, numbered "
				 "from 0: give --queue 0-%u", n - 1);
			return -EINVAL;
		}
		/* Its ring: framecnt frames of 2 KiB (its framesz) per queue. */
		w = snprintf(out, len, "net_af_packet0,iface=%s,qpairs=%u,framecnt=%u", cfg->iface, n,
			     cfg->ring_size ? cfg->ring_size : CAP_DPDK_DEFAULT_RING);
	} else {
		w = snprintf(out, len, "net_af_xdp0,iface=%s,start_queue=%u,queue_count=%u%s%s",
			     cfg->iface, first, n, xdp_prog ? ",xdp_prog=" : "", xdp_prog ? xdp_prog : "");
	}
done:
	if (w < 0 || (size_t)w >= len) {
		snprintf(why, whylen, "the port's devargs are longer than %zu bytes", len - 1);
		return -E2BIG;
	}
	return 0;
}

/* Append one argument (printf-formatted) to a. */
static int add(struct cap_dpdk_args *a, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (a->argc >= CAP_DPDK_MAX_ARGS)
		return -E2BIG;
	va_start(ap, fmt);
	w = vsnprintf(a->buf + a->used, sizeof(a->buf) - a->used, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= sizeof(a->buf) - a->used)
		return -E2BIG;
	a->argv[a->argc++] = a->buf + a->used;
	a->argv[a->argc] = NULL;
	a->used += (size_t)w + 1;
	return 0;
}

/* The lcores: the capture's CPUs (--cpu, then each worker's), else the
 * first CPU this process may run on. EAL pins the calling thread to the
 * first (backend_dpdk.c undoes that). */
static void lcore_list(const struct cap_cfg *cfg, char *out, size_t len)
{
	int seen[CAP_MAX_WORKERS + 1], n = 0;
	size_t used = 0;

	if (cfg->cpu >= 0)
		seen[n++] = cfg->cpu;
	for (unsigned int i = 0; i < cfg->workers && i < CAP_MAX_WORKERS; i++) {
		int c = cfg->worker_cpus[i], dup = 0;

		for (int k = 0; k < n; k++)
			dup |= seen[k] == c;
		if (c >= 0 && !dup)
			seen[n++] = c;
	}
	if (!n) {
		cpu_set_t set;

		seen[n++] = 0;
		if (sched_getaffinity(0, sizeof(set), &set) == 0)
			for (int c = 0; c < CPU_SETSIZE; c++)
				if (CPU_ISSET(c, &set)) {
					seen[0] = c;
					break;
				}
	}
	out[0] = '\0';
	for (int k = 0; k < n && used < len; k++)
		used += (size_t)snprintf(out + used, len - used, "%s%d", k ? "," : "", seen[k]);
}

/* A number in the file dir/sub/name; -1 if it cannot be read. */
static long read_count(const char *dir, const char *sub, const char *name)
{
	char path[512];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

long cap_dpdk_free_huge_mb(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long mb = 0, kb, free_pages;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (sscanf(e->d_name, "hugepages-%ldkB", &kb) == 1 && kb > 0 &&
		    (free_pages = read_count(dir, e->d_name, "free_hugepages")) > 0)
			mb += free_pages * (kb / 1024);
	closedir(d);
	return mb;
}

int cap_dpdk_use_hugepages(const struct cap_cfg *cfg, long free_mb, char *note, size_t len)
{
	note[0] = '\0';
	if (!cfg->dpdk_devargs || !cap_dpdk_is_pci(cfg->dpdk_devargs))
		return 0;
	if (free_mb >= CAP_DPDK_EAL_MB)
		return 1;
	/* A NIC's DMA works from 4 KiB pages too (IOVA as VA), but each mbuf
	 * then may span two pages and the IOMMU maps many more of them. */
	if (free_mb < 0)
		snprintf(note, len, "capbench-cap: note: this kernel has no hugepages (%s): the port "
			 "runs on 4 KiB pages (--no-huge)", CAP_DPDK_HUGEPAGES_DIR);
	else
		snprintf(note, len, "capbench-cap: note: %ld MiB of hugepages free, EAL needs %d: the "
			 "port runs on 4 KiB pages (--no-huge); for hugepages reserve them, e.g. echo %d > "
			 "%s/hugepages-2048kB/nr_hugepages", free_mb, CAP_DPDK_EAL_MB,
			 CAP_DPDK_EAL_MB / 2 + 64, CAP_DPDK_HUGEPAGES_DIR);
	return 0;
}

int cap_dpdk_eal_args(const struct cap_cfg *cfg, const char *devargs, long pid, int hugepages,
		      struct cap_dpdk_args *a, char *why, size_t whylen)
{
	char lcores[4 * CAP_MAX_WORKERS + 8], words[1024];
	int err = 0;

	memset(a, 0, sizeof(*a));
	lcore_list(cfg, lcores, sizeof(lcores));
	/* No hugepages and no shared configuration: nothing under /dev/hugepages
	 * or /var/run/dpdk outlives the process (--in-memory is refused with
	 * --no-huge, which implies legacy memory). With hugepages, --in-memory:
	 * no shared configuration either, and its hugepages are files in no
	 * file system, given back when the process ends. The file prefix is
	 * the pid's, so two capbench-cap processes never share EAL's runtime
	 * directory. A PCI port is named with -a (then PCI is scanned),
	 * anything else is a virtual device. */
	err |= add(a, "capbench-cap");
	if (hugepages) {
		err |= add(a, "--in-memory");
	} else {
		err |= add(a, "--no-huge");
		err |= add(a, "--no-shconf");
	}
	err |= add(a, "--no-telemetry");
	err |= add(a, "-l");
	err |= add(a, "%s", lcores);
	err |= add(a, "-m");
	err |= add(a, "%d", CAP_DPDK_EAL_MB);
	err |= add(a, "--file-prefix");
	err |= add(a, CAP_DPDK_PREFIX "%ld", pid);
	if (cap_dpdk_is_pci(devargs)) {
		err |= add(a, "-a");
	} else {
		err |= add(a, "--no-pci");
		err |= add(a, "--vdev");
	}
	err |= add(a, "%s", devargs);
	if (cfg->dpdk_eal) {
		snprintf(words, sizeof(words), "%s", cfg->dpdk_eal);
		for (char *save = NULL, *w = strtok_r(words, " \t\n", &save); w;
		     w = strtok_r(NULL, " \t\n", &save))
			err |= add(a, "%s", w);
	}
	if (err) {
		snprintf(why, whylen, "the EAL command line is too long: shorten --eal");
		return -E2BIG;
	}
	return 0;
}
