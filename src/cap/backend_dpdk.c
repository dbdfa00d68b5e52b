/* SPDX-License-Identifier: MIT */
/*
 * Backend "dpdk": a DPDK port read with rte_eth_rx_burst(), the kernel
 * bypass that the seeds' PF_RING ZC, netmap, szedata2 and Sniffer10G stand
 * for (issue 29). Built when meson finds libdpdk (the `dpdk` feature
 * option); without it the backend is still listed, and says why it cannot
 * run (CAP_DPDK_ABSENT).
 *
 * EAL is started inside capbench-cap with options derived from its
 * configuration (dpdk_eal.c): no hugepages and no shared configuration, so
 * nothing is left in /dev/hugepages or /var/run/dpdk whatever way the
 * process ends; the lcores are the capture's CPUs. The port is, on a veth
 * test bed, one of DPDK's virtual devices on --iface:
 *
 *   net_af_xdp     AF_XDP sockets (copy mode on veth). Given capbench's own
 *                  redirect program (xdp_xsk.bpf.c, whose XSKMAP is named
 *                  xsks_map as the driver wants) with xdp_prog=, it loads
 *                  that instead of its own, so the program still counts
 *                  the "delivered" frames. The driver attaches it through
 *                  netlink, which outlives the process; open() moves it
 *                  onto a bpf_link, which the kernel removes when the
 *                  process ends, however it ends.
 *   net_af_packet  TPACKET_V2 rings, one socket per queue in a fanout group
 *                  of the process's own (DPDK 22.11 names the group after
 *                  the pid, so several processes each see every frame, as
 *                  --procs wants). No XDP program of its own: like the
 *                  packet-socket backends it leaves the interface to the
 *                  test bed's counter (capbench-xdpcount), which counts
 *                  "delivered" and, in the cpumap model, feeds the ring
 *                  (caps.own_xdp_unless).
 *
 * or the user's devargs (--dpdk-devargs: a PCI address, or any devargs).
 *
 * One worker per queue polls its queue: rte_eth_rx_burst() never sleeps,
 * so a worker's CPU is 100 % busy by design (the summary says "polls", how
 * many of its bursts were empty and what share of its time went to them:
 * "idle_poll_pct", per queue in "queues").
 *
 * Where frames are lost, each from its own counter (the account rows):
 * rte_eth_stats' imissed (frames the port's ring had no room for; for
 * net_af_xdp only the socket's XDP_STATISTICS rx_dropped, the fill ring
 * found empty), rx_nombuf (no mbuf to receive into) and ierrors, and the
 * AF_XDP sockets' rx_ring_full, which DPDK 22.11 reports nowhere: read from
 * the sockets themselves (XDP_STATISTICS), found among the process's file
 * descriptors. Per queue (worker_stats, the summary's "queues"): the
 * port's q_ipackets and q_errors, the queue's socket's counters, and the
 * driver's per-queue xstats (rx_qN_*) where it has them; rx_nombuf, a real
 * port's imissed with several queues and not_redirected are the port's
 * alone, in the totals only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cap.h"
#include "dpdk_eal.h"
#include "util.h"

#define DEFAULT_BURST     32u

/* The rows of the account, in the order of cap_kstats.account[]. A row
 * that does not apply to the port's driver stays 0. */
enum { ROW_IMISSED, ROW_IERRORS, ROW_NOMBUF, ROW_RING_FULL, ROW_OTHER_QUEUES, ROW_TP_DROPS };

static const struct cap_account_row dpdk_account[] = {
	[ROW_IMISSED] = { "DPDK port", "rte_eth_stats imissed",
			  "frames the port's receive ring had no room for, counted by its driver (for "
			  "net_af_xdp: the AF_XDP socket's rx_dropped, the fill ring found empty because "
			  "the worker had not yet taken the frames; --ring-size, the worker's speed)" },
	[ROW_IERRORS] = { "DPDK port", "rte_eth_stats ierrors",
			  "frames the port received in error (a bad checksum, too long)" },
	[ROW_NOMBUF] = { "mbuf pool", "rte_eth_stats rx_nombuf",
			 "receives that found no free mbuf in the pool" },
	[ROW_RING_FULL] = { "AF_XDP RX ring", "XDP_STATISTICS rx_ring_full",
			    "net_af_xdp: the AF_XDP socket's RX ring was full, the worker not polling fast "
			    "enough (read from the sockets: DPDK does not count it)" },
	[ROW_OTHER_QUEUES] = { "AF_XDP queues", "XDP program not_redirected",
			       "net_af_xdp: the frame arrived on a receive queue the port does not read "
			       "and went on to the stack: --queue names the queues" },
	[ROW_TP_DROPS] = { "socket", "PACKET_STATISTICS tp_drops",
			   "net_af_packet: the packet socket's ring was full, the worker not polling fast "
			   "enough (read from the sockets: DPDK does not count it)" },
	{ NULL, NULL, NULL },
};

static const struct cb_opt_choice dpdk_drivers[] = {
	{ "af_xdp", CAP_DPDK_AF_XDP },
	{ "af_packet", CAP_DPDK_AF_PACKET },
	{ NULL, 0 },
};

static const struct cb_opt dpdk_options[] = {
	{ .name = "dpdk-driver", .type = CB_OPT_CHOICE, .arg = "DRIVER", .choices = dpdk_drivers,
	  .has_default = 1, .def = CAP_DPDK_AF_XDP,
	  .help = "the virtual device opened on --iface: af_xdp (net_af_xdp, with capbench's XDP "
		  "program) or af_packet (net_af_packet)", CB_OPT_AT(struct cap_cfg, dpdk_driver) },
	{ .name = "dpdk-devargs", .type = CB_OPT_STRING, .arg = "DEVARGS",
	  .help = "a real port instead: its PCI address (0000:01:00.0, bound to vfio-pci with "
		  "dpdk-devbind.py) or any devargs EAL takes; --iface is then optional (a name for "
		  "the port in the output)", CB_OPT_AT(struct cap_cfg, dpdk_devargs) },
	{ .name = "eal", .type = CB_OPT_STRING, .arg = "OPTIONS",
	  .help = "more EAL options, split on blanks, after capbench-cap's own (--no-huge --no-shconf "
		  "-l CPUS -m 256 --file-prefix capbench-PID)", CB_OPT_AT(struct cap_cfg, dpdk_eal) },
	{ .name = "queue", .type = CB_OPT_QUEUES, .arg = "N|LIST|all", .has_default = 1,
	  .def_text = "0", .help = "receive queues, consecutive (0-3), one worker each" },
	{ .name = "ring-size", .type = CB_OPT_COUNT, .arg = "N", .min = 64, .max = 8192,
	  .has_default = 1, .def = CAP_DPDK_DEFAULT_RING,
	  .help = "RX descriptors per queue (net_af_packet: ring frames), a power of two",
	  .valid = cb_opt_not_power_of_two, .fix = "give a power of two from 64 to 8192",
	  CB_OPT_AT(struct cap_cfg, ring_size) },
	{ .name = "batch", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = 512, .has_default = 1,
	  .def = DEFAULT_BURST, .help = "packets per rte_eth_rx_burst()",
	  .fix = "give 1..512 packets", CB_OPT_AT(struct cap_cfg, batch) },
	{ .name = "worker-cpus", .type = CB_OPT_CPUS, .arg = "LIST", .has_default = 1,
	  .def_text = "consecutive CPUs from --cpu, wrapping around (without --cpu: not pinned)",
	  .help = "pin worker i to the i-th CPU of LIST (0,1 or 0-3)" },
	CB_OPT_END,
};

#ifdef CAP_HAVE_DPDK
#include <fcntl.h>
#include <dirent.h>
#include <pthread.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/file.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>

#include "bpf_log.h"
#include "xdp_common.h"
#include "xdp_xsk.skel.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#define MAX_BURST 512u
/* The driver's per-queue xstats kept per queue (rx_qN_packets, _bytes,
 * _errors, and a driver's own such as rx_qN_dropped). */
#define QUEUE_XSTATS 8
/* The file a capbench-cap holds locked (flock) in EAL's runtime directory
 * while it runs: a second one with the same --file-prefix finds it held. */
#define PREFIX_LOCK "capbench-cap.lock"

struct dpdk_queue {
	/* The worker's: rte_eth_rx_burst() calls, those that returned
	 * nothing, and the TSC cycles of the loop's turns of each kind (an
	 * empty turn is idle polling). Read by the main thread after the
	 * workers ended. */
	uint64_t bursts, empty, idle_tsc, busy_tsc;
	/* The main thread's (stats()): the queue's counters. */
	uint64_t ipackets, errors, rx_dropped, ring_full, fill_empty, tp_drops;
	uint64_t xstat_id[QUEUE_XSTATS], xstat[QUEUE_XSTATS];
	char xstat_name[QUEUE_XSTATS][RTE_ETH_XSTATS_NAME_SIZE];
	unsigned int n_xstats;
	struct cap_kstats kstats; /* its rows, for worker_stats() */
};

struct dpdk {
	uint16_t port;
	uint16_t nq;
	uint32_t ring_size, burst;
	int driver;              /* enum cap_dpdk_driver; -1: --dpdk-devargs */
	struct rte_mempool *pool;
	struct cap_xdp_hook hook;
	int prog_fd;              /* net_af_xdp: the program the driver loaded; -1 = none */
	int counts_fd;            /* its "counts" map; -1 = none */
	int sock_fd[CAP_MAX_WORKERS]; /* the driver's AF_XDP or AF_PACKET sockets */
	unsigned int n_sock;
	char devargs[512], eal[1024], driver_name[64];
	double eal_init_s;
	FILE *log;               /* DPDK's log (rte_openlog_stream): kept for the reasons */
	char *log_buf;
	size_t log_len;
	int eal_up, port_up, hugepages;
	char huge_note[512];     /* cap_dpdk_use_hugepages()'s line, said once the port runs */
	int lock_fd;             /* PREFIX_LOCK, held; -1 = none */
	char lock_path[PATH_MAX];
	struct rte_eth_stats es;
	uint64_t xsk_ring_full, xsk_rx_dropped, xsk_fill_empty;
	uint64_t tp_drops;       /* net_af_packet's sockets, 64-bit running total */
	uint64_t tsc_hz;
	struct cap_kstats kstats;
	struct dpdk_queue q[];
};

/* Lines DPDK logs around a refusal that say nothing about its reason. */
static int says_nothing(const char *line, size_t n)
{
	static const char *const generic[] = {
		"Invalid 'command line' arguments", "probe failed", "Selected IOVA mode",
		"Detected ", "FATAL", "Cannot probe devices", "Usage:", "Failed to init internals",
		"failed to initialize", "IOVA as VA mode",
	};

	if (!n)
		return 1;
	for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++)
		if (memmem(line, n, generic[i], strlen(generic[i])))
			return 1;
	return 0;
}

/* DPDK's reason for a refusal: the last line it logged that is not one of
 * the generic ones, without the newline; "no reason given" if none. */
static const char *dpdk_reason(struct dpdk *st, char *out, size_t len)
{
	const char *end;

	fflush(st->log);
	snprintf(out, len, "no reason given");
	if (!st->log_buf)
		return out;
	end = st->log_buf + st->log_len;
	while (end > st->log_buf) {
		const char *start = end;

		while (start > st->log_buf && start[-1] != '\n')
			start--;
		if (!says_nothing(start, (size_t)(end - start))) {
			size_t n = (size_t)(end - start);

			while (n && (start[n - 1] == '\n' || start[n - 1] == ' ' || start[n - 1] == '.'))
				n--;
			snprintf(out, len, "%.*s", (int)n, start);
			return out;
		}
		end = start > st->log_buf ? start - 1 : start;
	}
	return out;
}

/* What getopt wrote to stderr while EAL parsed (an unknown option): its
 * first line, without the program's name; empty if nothing useful. */
static void getopt_said(int fd, char *out, size_t len)
{
	char buf[2048];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	const char *s = buf;

	out[0] = '\0';
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (says_nothing(buf, strlen(buf)))
		return;
	if (!strncmp(s, "capbench-cap: ", 14))
		s += 14;
	snprintf(out, len, "%s", s);
}

/*
 * rte_eal_init(): EAL parses its argv with getopt (an unknown option is
 * reported on stderr, and EAL then prints its usage on stdout, which is
 * capbench-cap's JSON Lines), pins the calling thread to the first lcore
 * and starts its own threads. So stdout and stderr go to a scratch file
 * while it runs, and the thread's CPU set is put back after: the workers
 * cap.c starts from this thread are pinned by cap.c, not by EAL. DPDK's log
 * goes to st->log, never to stdout. The signals cap.c blocked stay blocked
 * in EAL's threads (they inherit the mask).
 */
static int start_eal(const struct cap_cfg *cfg, struct dpdk *st, struct cap_dpdk_args *a)
{
	int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
	int scratch = memfd_create("capbench-eal-output", MFD_CLOEXEC);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC), saved_opterr = opterr;
	cpu_set_t cpus;
	int have_cpus = sched_getaffinity(0, sizeof(cpus), &cpus) == 0, ret, err;
	uint64_t t0 = cb_now_ns();
	char why[2048], said[2048];

	if (saved_out < 0 || saved_err < 0 || scratch < 0 || null < 0)
		cb_fatal("cannot set aside stdout for EAL: %s", strerror(errno));
	for (int i = 0; i < a->argc; i++)
		snprintf(st->eal + strlen(st->eal), sizeof(st->eal) - strlen(st->eal), "%s%s",
			 i ? " " : "", a->argv[i]);
	fflush(stdout);
	fflush(stderr);
	dup2(null, STDOUT_FILENO);
	dup2(scratch, STDERR_FILENO);
	/* EAL's getopt, after capbench-cap's own (which is silent): from the
	 * first argument, naming an unknown option. */
	optind = 1;
	opterr = 1;
	ret = rte_eal_init(a->argc, a->argv);
	err = rte_errno;
	opterr = saved_opterr;
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	close(null);
	if (have_cpus)
		sched_setaffinity(0, sizeof(cpus), &cpus);
	st->eal_init_s = (double)(cb_now_ns() - t0) / 1e9;
	getopt_said(scratch, said, sizeof(said));
	close(scratch);
	if (ret >= 0) {
		st->eal_up = 1;
		return 0;
	}
	/* EAL refused its options, the --eal words, or the port's devargs
	 * (a device it cannot probe): the user's to fix, in DPDK's words. */
	if (!said[0])
		dpdk_reason(st, said, sizeof(said));
	snprintf(why, sizeof(why), "%s", said);
	return cb_user_fault(-(err ? err : EINVAL), "DPDK's EAL refuses to start (%s): %s; check "
			     "--eal and --dpdk-devargs", st->eal, why);
}

/*
 * EAL's file prefix is this process's own (capbench-PID) unless --eal names
 * another. With --no-shconf EAL itself takes no lock in its runtime
 * directory, so two processes given the same prefix would share it
 * unawares (the first to end removes what the other still uses). Hold a
 * lock file there; the kernel drops the lock with the process, however it
 * ends. A second capbench-cap with the prefix is refused, before it touches
 * the port.
 */
static int hold_prefix(struct dpdk *st)
{
	const char *dir = rte_eal_get_runtime_dir(), *prefix = strrchr(dir, '/');

	snprintf(st->lock_path, sizeof(st->lock_path), "%s/%s", dir, PREFIX_LOCK);
	st->lock_fd = open(st->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (st->lock_fd < 0)
		return cb_user_fault(-errno, "cannot make the lock file %s: %s", st->lock_path, strerror(errno));
	if (flock(st->lock_fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	close(st->lock_fd);
	st->lock_fd = -1;
	st->lock_path[0] = '\0'; /* the other process's */
	return cb_user_fault(-EBUSY, "another DPDK process runs with EAL's file prefix '%s': give each its "
			     "own --file-prefix in --eal, or leave it out (capbench-cap's own is capbench-PID)",
			     prefix ? prefix + 1 : dir);
}

/* The map named `name` of the program prog_fd, opened; -1 if it has none. */
static int prog_map(int prog_fd, const char *name)
{
	uint32_t ids[16];
	struct bpf_prog_info info = { .nr_map_ids = 16, .map_ids = (uint64_t)(uintptr_t)ids };
	uint32_t len = sizeof(info);

	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -1;
	for (uint32_t i = 0; i < info.nr_map_ids && i < 16; i++) {
		struct bpf_map_info mi = { 0 };
		uint32_t mlen = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &mlen) && !strcmp(mi.name, name))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * net_af_xdp attached capbench's program (xdp_prog=) through netlink, which
 * keeps it on the interface after the process is gone (a SIGKILL would
 * leave it). Move it onto a bpf_link, which the kernel removes with the
 * last descriptor: detach, then attach the same program (a frame that
 * arrives in between goes to the stack uncounted: this happens before the
 * "ready" line, before any traffic). The driver's own removal at close
 * then finds nothing to remove.
 */
static int take_over_program(const struct cap_cfg *cfg, struct dpdk *st)
{
	uint32_t id = 0;
	int err;

	if (bpf_xdp_query_id(cfg->ifindex, 0, &id) || !id)
		return cb_user_fault(-ENOENT, "net_af_xdp attached no XDP program to %s", cfg->iface);
	st->prog_fd = bpf_prog_get_fd_by_id(id);
	if (st->prog_fd < 0)
		return -errno;
	bpf_xdp_detach(cfg->ifindex, 0, NULL);
	if ((err = cap_xdp_hook_attach(cfg, &st->hook, st->prog_fd)))
		return err;
	st->counts_fd = prog_map(st->prog_fd, "counts");
	return 0;
}

/* The program's ELF as a file the driver can open (xdp_prog= takes a
 * path): a memfd, named by /proc/self/fd. */
static int program_file(char *path, size_t len)
{
	size_t sz;
	const void *elf = xdp_xsk_bpf__elf_bytes(&sz);
	int fd = memfd_create("capbench-xdp_xsk.bpf.o", MFD_CLOEXEC);

	if (fd < 0 || write(fd, elf, sz) != (ssize_t)sz) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		fprintf(stderr, "capbench-cap: cannot write the XDP program for net_af_xdp: %s\n",
			strerror(-err));
		return err;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* The sockets of `domain` the driver opened (net_af_xdp: AF_XDP, the
 * process's only ones; net_af_packet: AF_PACKET, all but the promiscuous
 * membership's), found among the process's descriptors: DPDK's API does not
 * name them. */
static void find_sockets(struct dpdk *st, int domain)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) && st->n_sock < CAP_MAX_WORKERS) {
		int fd = atoi(e->d_name), its = 0;
		socklen_t len = sizeof(its);

		if (e->d_name[0] == '.' || fd == dirfd(d) || fd == st->hook.promisc_fd)
			continue;
		if (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &its, &len) && its == domain)
			st->sock_fd[st->n_sock++] = fd;
	}
	closedir(d);
}

/*
 * The mbuf pool, as rte_pktmbuf_pool_create() makes it but with
 * RTE_MEMPOOL_F_NO_IOVA_CONTIG. net_af_xdp registers the pool's memory as
 * its UMEM, taking each object to be rte_mempool_calc_obj_size() bytes from
 * the last; but a pool that needs IOVA-contiguous objects keeps each object
 * within one page, and with --no-huge's 4 KiB pages that leaves the rest of
 * each page unused: the objects are then 4 KiB apart, the UMEM covers only
 * the first ~60 % of them, and the kernel silently skips fill-ring frames
 * outside it until the fill ring is empty (measured: 7,104 of 100,000 frames
 * read, the rest rx_dropped). Virtual ports need no IOVA contiguity; a
 * real port's NIC writes each mbuf by DMA, so its pool keeps them whole
 * (flags 0).
 */
static struct rte_mempool *mbuf_pool(unsigned int n, unsigned int flags)
{
	struct rte_pktmbuf_pool_private priv = { .mbuf_data_room_size = RTE_MBUF_DEFAULT_BUF_SIZE };
	struct rte_mempool *mp = rte_mempool_create_empty("capbench_rx", n,
		sizeof(struct rte_mbuf) + RTE_MBUF_DEFAULT_BUF_SIZE, 256, sizeof(priv),
		(int)rte_socket_id(), flags);

	if (!mp)
		return NULL;
	if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL))
		goto fail;
	rte_pktmbuf_pool_init(mp, &priv);
	if (rte_mempool_populate_default(mp) < 0)
		goto fail;
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
fail:
	rte_mempool_free(mp);
	return NULL;
}

/* The driver's per-queue xstats (rx_qN_...), at most QUEUE_XSTATS a queue;
 * none if it has none. */
static void find_queue_xstats(struct dpdk *st)
{
	int n = rte_eth_xstats_get_names(st->port, NULL, 0);
	struct rte_eth_xstat_name *names;

	if (n <= 0 || !(names = calloc((size_t)n, sizeof(*names))))
		return;
	n = rte_eth_xstats_get_names(st->port, names, (unsigned int)n);
	for (uint16_t q = 0; q < st->nq; q++) {
		struct dpdk_queue *dq = &st->q[q];
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "rx_q%u_", q);
		for (int i = 0; i < n && dq->n_xstats < QUEUE_XSTATS; i++) {
			if (strncmp(names[i].name, prefix, strlen(prefix)))
				continue;
			dq->xstat_id[dq->n_xstats] = (uint64_t)i;
			snprintf(dq->xstat_name[dq->n_xstats], sizeof(dq->xstat_name[0]), "%s", names[i].name);
			dq->n_xstats++;
		}
	}
	free(names);
}

static int setup_port(const struct cap_cfg *cfg, struct dpdk *st)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	unsigned int mbufs = st->nq * (4 * st->ring_size + 4096);
	char why[512];
	int err;

	memset(&conf, 0, sizeof(conf));
	/* A PCI port EAL did not take: absent, or still its kernel driver's. */
	if (rte_eth_dev_count_avail() == 0 && cap_dpdk_is_pci(st->devargs))
		return cb_user_fault(-ENODEV, "DPDK found no port at PCI address '%s': check that it is "
				     "there and bound to vfio-pci, not to its kernel driver (dpdk-devbind.py "
				     "--status; dpdk-devbind.py -b vfio-pci %s)", st->devargs, st->devargs);
	if (rte_eth_dev_count_avail() == 0)
		return cb_user_fault(-ENODEV, "DPDK found no port for '%s': %s", st->devargs,
				     dpdk_reason(st, why, sizeof(why)));
	st->port = (uint16_t)rte_eth_find_next_owned_by(0, RTE_ETH_DEV_NO_OWNER);
	if ((err = rte_eth_dev_info_get(st->port, &info)))
		return cb_user_fault(err, "DPDK cannot describe port '%s': %s", st->devargs, strerror(-err));
	snprintf(st->driver_name, sizeof(st->driver_name), "%s", info.driver_name);
	if (st->nq > info.max_rx_queues)
		return cb_user_fault(-EINVAL, "port '%s' (%s) has %u receive queues: give fewer --queue",
				     st->devargs, info.driver_name, info.max_rx_queues);
	/* Several queues of a real port: RSS spreads the flows over them. */
	if (st->nq > 1 && info.flow_type_rss_offloads) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = info.flow_type_rss_offloads &
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP);
	}
	st->pool = mbuf_pool(mbufs, st->driver >= 0 ? RTE_MEMPOOL_F_NO_IOVA_CONTIG : 0);
	if (!st->pool)
		return cb_user_fault(-rte_errno, "DPDK cannot make a pool of %u mbufs in EAL's %d MiB (%s): "
				     "use a smaller --ring-size or fewer --queue", mbufs, CAP_DPDK_EAL_MB,
				     rte_strerror(rte_errno));
	/* net_af_xdp pairs every RX queue with a TX queue. */
	if ((err = rte_eth_dev_configure(st->port, st->nq, st->nq, &conf)))
		return cb_user_fault(err, "DPDK refuses to configure port '%s' with %u queues: %s",
				     st->devargs, st->nq, dpdk_reason(st, why, sizeof(why)));
	for (uint16_t q = 0; q < st->nq; q++) {
		err = rte_eth_rx_queue_setup(st->port, q, (uint16_t)st->ring_size,
					     (unsigned int)rte_eth_dev_socket_id(st->port), NULL, st->pool);
		if (!err)
			err = rte_eth_tx_queue_setup(st->port, q, (uint16_t)st->ring_size,
						     (unsigned int)rte_eth_dev_socket_id(st->port), NULL);
		if (err)
			return cb_user_fault(err, "DPDK cannot set up queue %u of port '%s' (%u descriptors): %s",
					     q, st->devargs, st->ring_size, dpdk_reason(st, why, sizeof(why)));
	}
	if ((err = rte_eth_dev_start(st->port)))
		return cb_user_fault(err, "DPDK cannot start port '%s': %s", st->devargs,
				     dpdk_reason(st, why, sizeof(why)));
	st->port_up = 1;
	find_queue_xstats(st);
	return 0;
}

/*
 * EAL's runtime directory (/var/run/dpdk/PREFIX as root): with --no-shconf
 * it stays empty (no config, no multi-process socket, no fbarrays), but EAL
 * makes it and rte_eal_cleanup() leaves it. Removed here, with
 * /var/run/dpdk if that is then empty; a directory of a capbench-cap that
 * was killed (SIGKILL) is removed by the next one (remove_stale_dirs).
 */
#define RUNTIME_PARENT "/var/run/dpdk" /* root's (eal_create_runtime_dir) */

static void remove_runtime_dir(const char *dir)
{
	char parent[PATH_MAX], *slash;

	if (!dir[0] || rmdir(dir))
		return;
	snprintf(parent, sizeof(parent), "%s", dir);
	if ((slash = strrchr(parent, '/')) && slash != parent) {
		*slash = '\0';
		rmdir(parent); /* fails, as it should, while another process's is there */
	}
}

/* The empty runtime directories (capbench-PID) of capbench-caps that are
 * gone. */
static void remove_stale_dirs(void)
{
	DIR *d = opendir(RUNTIME_PARENT);
	struct dirent *e;
	char path[PATH_MAX];
	long pid;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (sscanf(e->d_name, CAP_DPDK_PREFIX "%ld", &pid) != 1 || pid <= 0 ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		/* Its lock file (hold_prefix), which no one holds now. */
		snprintf(path, sizeof(path), "%s/%s/%s", RUNTIME_PARENT, e->d_name, PREFIX_LOCK);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", RUNTIME_PARENT, e->d_name);
		rmdir(path); /* only if empty: a stranger's files stay */
	}
	closedir(d);
}

static void dpdk_close(void *state);

static int dpdk_open(const struct cap_cfg *cfg, void **state)
{
	struct dpdk *st = calloc(1, sizeof(*st) + cfg->workers * sizeof(st->q[0]));
	struct cap_dpdk_args *a = calloc(1, sizeof(*a));
	char prog[64], why[512];
	int prog_mem = -1, err;

	if (!st || !a) {
		free(st);
		free(a);
		return -ENOMEM;
	}
	st->nq = (uint16_t)cfg->workers;
	st->ring_size = cfg->ring_size ? cfg->ring_size : CAP_DPDK_DEFAULT_RING;
	st->burst = cfg->batch ? cfg->batch : DEFAULT_BURST;
	st->driver = cfg->dpdk_devargs ? -1 : cfg->dpdk_driver;
	st->prog_fd = st->counts_fd = st->lock_fd = -1;
	st->hook.link_fd = st->hook.promisc_fd = -1;
	st->hook.mode = "none";
	*state = st;
	st->log = open_memstream(&st->log_buf, &st->log_len);
	if (!st->log) {
		err = -errno;
		goto fail;
	}
	rte_openlog_stream(st->log);
	/* Promiscuous through an AF_PACKET membership (undone by the kernel
	 * when the process ends), not the driver's IFF_PROMISC, which a
	 * SIGKILL would leave set. */
	if (st->driver >= 0 && (err = cap_xdp_hook_init(cfg, &st->hook)))
		goto fail;
	if (st->driver == CAP_DPDK_AF_XDP && (prog_mem = program_file(prog, sizeof(prog))) < 0) {
		err = prog_mem;
		goto fail;
	}
	/* A PCI port on hugepages when there are enough, else on 4 KiB pages:
	 * said in one line once the port runs (a refusal stays one line). */
	st->hugepages = cap_dpdk_use_hugepages(cfg, cap_dpdk_free_huge_mb(CAP_DPDK_HUGEPAGES_DIR),
					       st->huge_note, sizeof(st->huge_note));
	if ((err = cap_dpdk_devargs(cfg, prog_mem >= 0 ? prog : NULL, st->devargs, sizeof(st->devargs),
				    why, sizeof(why))) ||
	    (err = cap_dpdk_eal_args(cfg, st->devargs, (long)getpid(), st->hugepages, a, why, sizeof(why)))) {
		err = cb_user_fault(err, "%s", why);
		goto fail;
	}
	remove_stale_dirs();
	if ((err = start_eal(cfg, st, a)) || (err = hold_prefix(st)) || (err = setup_port(cfg, st)))
		goto fail;
	if (st->huge_note[0])
		fprintf(stderr, "%s\n", st->huge_note);
	st->tsc_hz = rte_get_tsc_hz();
	if (st->driver == CAP_DPDK_AF_XDP) {
		if ((err = take_over_program(cfg, st)))
			goto fail;
		find_sockets(st, AF_XDP);
	} else if (st->driver == CAP_DPDK_AF_PACKET) {
		find_sockets(st, AF_PACKET);
	}
	if (prog_mem >= 0)
		close(prog_mem);
	free(a);
	return 0;
fail:
	if (prog_mem >= 0)
		close(prog_mem);
	free(a);
	dpdk_close(st);
	*state = NULL;
	return err;
}

static int dpdk_run(void *state, struct cap_worker *w)
{
	struct dpdk *st = state;
	struct dpdk_queue *dq = &st->q[w->index];
	uint16_t queue = (uint16_t)w->index;
	struct rte_mbuf *b[MAX_BURST];
	/* Until its first burst, a worker is idle. */
	uint64_t turn = rte_rdtsc(), *last_kind = &dq->idle_tsc;

	/* Polls: an empty burst is tried again at once (the CPU is busy by
	 * design). Each turn of the loop is timed with the TSC (rte_rdtsc, no
	 * system call) from its start to the next one's and charged to
	 * idle_tsc when its burst was empty, else to busy_tsc: the share of
	 * the worker's time that was idle polling. */
	for (;;) {
		uint64_t t = rte_rdtsc(), now;
		uint16_t n;
		int end = 0;

		*last_kind += t - turn;
		turn = t;
		n = rte_eth_rx_burst(st->port, queue, b, (uint16_t)st->burst);
		dq->bursts++;
		if (!n) {
			dq->empty++;
			last_kind = &dq->idle_tsc;
			if (cap_should_stop(w))
				break; /* empty after the stop: drained */
			continue;
		}
		last_kind = &dq->busy_tsc;
		/* Virtual ports give no receive time: the burst's read time
		 * stands for each packet. */
		now = cap_now_mono_ns();
		for (uint16_t i = 0; i < n && !end; i++) {
			const struct rte_mbuf *m = b[i];

			/* Stopped and the drain's budget spent (cap.h): the
			 * rest of the burst is freed unread. */
			if (!cap_drain_may_read(w)) {
				end = 1;
				break;
			}
			end |= cap_packet(w, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, m->pkt_len, now);
		}
		rte_pktmbuf_free_bulk(b, n);
		cap_publish(w);
		if (end)
			break;
	}
	*last_kind += rte_rdtsc() - turn;
	return 0;
}

/* The queue socket i serves: the driver opens one per queue, in queue
 * order (so in descriptor order); NULL when their number says otherwise,
 * and then the sockets' counts are in the totals only. */
static struct dpdk_queue *socket_queue(struct dpdk *st, unsigned int i)
{
	return st->n_sock == st->nq ? &st->q[i] : NULL;
}

/* PACKET_STATISTICS of net_af_packet's sockets: 32-bit counts since the
 * last read (the kernel zeroes them on every read, and DPDK never reads
 * them), folded into 64-bit totals as cap.c's once-a-second stats() call
 * allows (cap.c, CAP_STATS_EVERY_NS). */
static void read_packet_stats(struct dpdk *st)
{
	for (unsigned int i = 0; i < st->n_sock; i++) {
		struct dpdk_queue *dq = socket_queue(st, i);
		struct tpacket_stats ts;
		socklen_t len = sizeof(ts);

		if (getsockopt(st->sock_fd[i], SOL_PACKET, PACKET_STATISTICS, &ts, &len))
			continue;
		st->tp_drops += ts.tp_drops;
		if (dq)
			dq->tp_drops += ts.tp_drops;
	}
}

/* XDP_STATISTICS of net_af_xdp's sockets: 64-bit totals in the kernel. */
static void read_xsk_stats(struct dpdk *st)
{
	struct xdp_statistics xs[CAP_MAX_WORKERS];
	uint64_t full = 0, dropped = 0, empty = 0;

	for (unsigned int i = 0; i < st->n_sock; i++) {
		socklen_t len = sizeof(xs[i]);

		if (getsockopt(st->sock_fd[i], SOL_XDP, XDP_STATISTICS, &xs[i], &len) || len != sizeof(xs[i]))
			return; /* keep the last counts */
		full += xs[i].rx_ring_full;
		dropped += xs[i].rx_dropped;
		empty += xs[i].rx_fill_ring_empty_descs;
	}
	st->xsk_ring_full = full;
	st->xsk_rx_dropped = dropped;
	st->xsk_fill_empty = empty;
	for (unsigned int i = 0; i < st->n_sock; i++) {
		struct dpdk_queue *dq = socket_queue(st, i);

		if (dq) {
			dq->rx_dropped = xs[i].rx_dropped;
			dq->ring_full = xs[i].rx_ring_full;
			dq->fill_empty = xs[i].rx_fill_ring_empty_descs;
		}
	}
}

/* The port's per-queue counters: rte_eth_stats' q_ipackets and q_errors
 * (kept for the first RTE_ETHDEV_QUEUE_STAT_CNTRS queues) and the driver's
 * per-queue xstats. */
static void read_queue_stats(struct dpdk *st)
{
	for (uint16_t q = 0; q < st->nq; q++) {
		struct dpdk_queue *dq = &st->q[q];

		if (q < RTE_ETHDEV_QUEUE_STAT_CNTRS) {
			dq->ipackets = st->es.q_ipackets[q];
			dq->errors = st->es.q_errors[q];
		}
		if (dq->n_xstats &&
		    rte_eth_xstats_get_by_id(st->port, dq->xstat_id, dq->xstat, dq->n_xstats) != (int)dq->n_xstats)
			memset(dq->xstat, 0, sizeof(dq->xstat));
	}
}

/* Queue q's rows, with several queues: those counted per queue (its
 * socket's; ierrors as q_errors; imissed as net_af_xdp's socket's
 * rx_dropped). The port's alone stay 0 here (see the top). */
static void queue_account(struct dpdk *st, uint16_t q)
{
	struct dpdk_queue *dq = &st->q[q];
	struct cap_kstats *k = &dq->kstats;

	memset(k, 0, sizeof(*k));
	k->account[ROW_IMISSED] = st->driver == CAP_DPDK_AF_XDP ? dq->rx_dropped : 0;
	k->account[ROW_IERRORS] = dq->errors;
	k->account[ROW_RING_FULL] = dq->ring_full;
	k->account[ROW_TP_DROPS] = dq->tp_drops;
	for (int i = 0; dpdk_account[i].layer; i++)
		k->drops += k->account[i];
	k->packets = dq->ipackets + k->drops;
}

static void dpdk_stats(void *state, struct cap_kstats *out)
{
	struct dpdk *st = state;
	struct cap_kstats *k = &st->kstats;
	struct rte_eth_stats es;

	if (rte_eth_stats_get(st->port, &es) == 0)
		st->es = es;
	if (st->driver == CAP_DPDK_AF_XDP)
		read_xsk_stats(st);
	else if (st->driver == CAP_DPDK_AF_PACKET)
		read_packet_stats(st);
	read_queue_stats(st);
	if (st->counts_fd >= 0)
		cap_xdp_kstats(st->counts_fd, k);
	k->account[ROW_IMISSED] = st->es.imissed;
	k->account[ROW_IERRORS] = st->es.ierrors;
	k->account[ROW_NOMBUF] = st->es.rx_nombuf;
	k->account[ROW_RING_FULL] = st->xsk_ring_full;
	/* net_af_packet's frames all pass capbench's program (no sockets in
	 * its map): only net_af_xdp's passed frames are lost to the capture. */
	k->account[ROW_OTHER_QUEUES] = st->driver == CAP_DPDK_AF_XDP ? k->xdp_not_redirected : 0;
	k->account[ROW_TP_DROPS] = st->tp_drops;
	k->drops = 0;
	for (int i = 0; dpdk_account[i].layer; i++)
		k->drops += k->account[i];
	/* What reached the port: read, or lost on the way in. */
	k->packets = st->es.ipackets + k->drops;
	if (st->nq == 1) /* one queue has the port's every count */
		st->q[0].kstats = *k;
	else
		for (uint16_t q = 0; q < st->nq; q++)
			queue_account(st, q);
	*out = *k;
}

/* A worker's queue: its rows as of the last dpdk_stats(). */
static void dpdk_worker_stats(void *state, unsigned int worker, struct cap_kstats *out)
{
	*out = ((struct dpdk *)state)->q[worker].kstats;
}

/* 100 * idle / (idle + busy): the share of polling time that found nothing. */
static double idle_pct(uint64_t idle, uint64_t busy)
{
	return idle + busy ? 100.0 * (double)idle / (double)(idle + busy) : 0.0;
}

/* "queues": each queue's counters, its polling and the driver's xstats. */
static void put_queues(struct dpdk *st, struct cb_json *j)
{
	cb_json_arr_begin(j, "queues");
	for (uint16_t q = 0; q < st->nq; q++) {
		const struct dpdk_queue *dq = &st->q[q];

		cb_json_elem_begin(j);
		cb_json_u64(j, "queue", q);
		cb_json_u64(j, "ipackets", dq->ipackets);
		cb_json_u64(j, "errors", dq->errors);
		if (st->driver == CAP_DPDK_AF_XDP) {
			cb_json_u64(j, "rx_dropped", dq->rx_dropped);
			cb_json_u64(j, "rx_ring_full", dq->ring_full);
			cb_json_u64(j, "rx_fill_ring_empty_descs", dq->fill_empty);
		} else if (st->driver == CAP_DPDK_AF_PACKET) {
			cb_json_u64(j, "tp_drops", dq->tp_drops);
		}
		cb_json_u64(j, "bursts", dq->bursts);
		cb_json_u64(j, "empty_bursts", dq->empty);
		cb_json_double(j, "poll_s", st->tsc_hz ? (double)(dq->idle_tsc + dq->busy_tsc) / (double)st->tsc_hz : 0);
		cb_json_double(j, "idle_poll_pct", idle_pct(dq->idle_tsc, dq->busy_tsc));
		cb_json_obj_begin(j, "xstats");
		for (unsigned int i = 0; i < dq->n_xstats; i++)
			cb_json_u64(j, dq->xstat_name[i], dq->xstat[i]);
		cb_json_obj_end(j);
		cb_json_obj_end(j);
	}
	cb_json_arr_end(j);
}

static void dpdk_summary(void *state, struct cb_json *j)
{
	struct dpdk *st = state;
	uint64_t bursts = 0, empty = 0, idle = 0, busy = 0;

	for (unsigned int i = 0; i < st->nq; i++) {
		bursts += st->q[i].bursts;
		empty += st->q[i].empty;
		idle += st->q[i].idle_tsc;
		busy += st->q[i].busy_tsc;
	}
	cb_json_str(j, "dpdk_driver", st->driver_name);
	cb_json_str(j, "devargs", st->devargs);
	cb_json_str(j, "eal_args", st->eal);
	cb_json_double(j, "eal_init_s", st->eal_init_s);
	cb_json_bool(j, "hugepages", st->hugepages);
	cb_json_str(j, "xdp_mode", st->hook.mode);
	cb_json_u64(j, "ring_size", st->ring_size);
	cb_json_u64(j, "batch", st->burst);
	/* The workers poll: their CPUs are busy whatever the traffic; of
	 * that time, idle_poll_pct went to bursts that found nothing. */
	cb_json_bool(j, "polls", 1);
	cb_json_u64(j, "bursts", bursts);
	cb_json_u64(j, "empty_bursts", empty);
	cb_json_double(j, "idle_poll_pct", idle_pct(idle, busy));
	cb_json_u64(j, "imissed", st->es.imissed);
	cb_json_u64(j, "rx_nombuf", st->es.rx_nombuf);
	cb_json_u64(j, "ierrors", st->es.ierrors);
	if (st->driver == CAP_DPDK_AF_XDP) {
		cb_json_u64(j, "xsk_sockets", st->n_sock);
		cb_json_u64(j, "rx_ring_full", st->xsk_ring_full);
		cb_json_u64(j, "rx_dropped", st->xsk_rx_dropped);
		cb_json_u64(j, "rx_fill_ring_empty_descs", st->xsk_fill_empty);
		cb_json_u64(j, "not_redirected", st->kstats.xdp_not_redirected);
	} else if (st->driver == CAP_DPDK_AF_PACKET) {
		cb_json_u64(j, "packet_sockets", st->n_sock);
		cb_json_u64(j, "tp_drops", st->tp_drops);
	}
	put_queues(st, j);
}

/* Undo what open() did, in reverse; also for a half-done open(). */
static void dpdk_close(void *state)
{
	struct dpdk *st = state;

	cap_xdp_hook_release(&st->hook); /* first: no more frames counted */
	if (st->counts_fd >= 0)
		close(st->counts_fd);
	if (st->prog_fd >= 0)
		close(st->prog_fd);
	if (st->port_up)
		rte_eth_dev_stop(st->port);
	if (st->eal_up) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
		if (st->lock_fd >= 0) { /* unlinked while held: no one else takes it meanwhile */
			unlink(st->lock_path);
			close(st->lock_fd);
		}
		if (rte_eth_dev_count_avail())
			rte_eth_dev_close(st->port);
		if (st->pool)
			rte_mempool_free(st->pool);
		rte_eal_cleanup();
		remove_runtime_dir(dir);
	}
	if (st->log) {
		rte_openlog_stream(NULL);
		fclose(st->log);
	}
	free(st->log_buf);
	free(st);
}
#define DPDK_OPS .open = dpdk_open, .run = dpdk_run, .stats = dpdk_stats, \
	.worker_stats = dpdk_worker_stats, .summary = dpdk_summary, .close = dpdk_close, .absent = NULL
#else
/* A build without libdpdk: listed, refused with this line. */
#define CAP_DPDK_ABSENT "capbench-cap was built without DPDK (meson found no libdpdk): apt-get " \
	"install libdpdk-dev, then rebuild (make build)"

#define DPDK_OPS .absent = CAP_DPDK_ABSENT
#endif

const struct cap_backend cap_backend_dpdk = {
	.name = "dpdk",
	.describe = "a DPDK port (net_af_xdp or net_af_packet on the interface, or a real port) "
		    "polled with rte_eth_rx_burst",
	.seed = "the kernel bypass of PF_RING ZC, netmap, szedata2 and Sniffer10G (seeds 000, 001, 004)",
	.options = dpdk_options,
	.caps = { .own_xdp = 1, .own_xdp_unless = "dpdk-driver=af_packet", .kernel_stats = "rte_eth_stats", .clock = CAP_CLOCK_READ,
		  .workers = 1, .queues = 1, .polls = 1, .port_option = "dpdk-devargs", .needs = { "libdpdk", "af_xdp", "xdp_link" } },
	.account = dpdk_account,
	DPDK_OPS,
};
