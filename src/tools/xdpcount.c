/* SPDX-License-Identifier: MIT */
/*
 * capbench-xdpcount: attach the pass-and-count XDP program (xdp_count.bpf.c)
 * to an interface, print "ready", and at SIGINT/SIGTERM print how many frames
 * (and capbench frames) reached the interface.
 *
 * The program is attached through a bpf_link: the kernel detaches it when
 * the last reference to the link goes away, i.e. when this process exits
 * for whatever reason, so a killed run leaves no XDP program behind.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/if_link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "jsonl.h"
#include "bpf_log.h"
#include "util.h"
#include "xdp_count.skel.h"

struct cb_counts {
	uint64_t packets, bytes, capbench;
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: capbench-xdpcount --iface IF [--mode native|generic]\n"
"\n"
"Count the frames that reach IF with an XDP program that passes them on.\n"
"Prints {\"type\":\"ready\"} once attached and one {\"type\":\"summary\"} line\n"
"with packets, bytes and capbench frames at SIGINT/SIGTERM. Needs root.\n"
"The program is detached when this process exits.\n");
}

static int read_counts(struct xdp_count_bpf *skel, struct cb_counts *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	struct cb_counts *vals;
	uint32_t key = 0;
	int err;

	if (ncpu < 0)
		return ncpu;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	err = bpf_map_lookup_elem(bpf_map__fd(skel->maps.counts), &key, vals);
	if (err)
		err = -errno;
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; !err && i < ncpu; i++) {
		sum->packets += vals[i].packets;
		sum->bytes += vals[i].bytes;
		sum->capbench += vals[i].capbench;
	}
	free(vals);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *iface = NULL, *mode = "native";
	struct xdp_count_bpf *skel;
	struct sigaction sa = { .sa_handler = on_stop };
	struct cb_counts counts;
	struct cb_json j;
	sigset_t block, waitmask;
	int c, ifindex, link_fd, err;

	cb_set_progname(argv[0]);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'i': iface = optarg; break;
		case 'm': mode = optarg; break;
		case 'h': usage(stdout); return CB_EXIT_OK;
		default: cb_opt_fail(c, argv);
		}
	}
	if (!iface)
		cb_usage_error("no interface given: use --iface IF");
	if (strcmp(mode, "native") && strcmp(mode, "generic"))
		cb_usage_error("bad --mode '%s': use native or generic", mode);
	if (geteuid() != 0)
		cb_usage_error("must run as root (attaching XDP needs CAP_NET_ADMIN and CAP_BPF)");
	ifindex = cb_ifindex(iface);
	if (ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)", iface);

	cb_libbpf_quiet();
	skel = xdp_count_bpf__open_and_load();
	if (!skel)
		cb_fatal("cannot load the XDP counter: %s", strerror(errno));

	{
		LIBBPF_OPTS(bpf_link_create_opts, lopts,
			.flags = !strcmp(mode, "generic") ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE);
		link_fd = bpf_link_create(bpf_program__fd(skel->progs.cb_count), ifindex,
					  BPF_XDP, &lopts);
	}
	if (link_fd < 0) {
		err = -errno;
		xdp_count_bpf__destroy(skel);
		if (err == -EBUSY || err == -EEXIST)
			cb_fatal("%s already has an XDP program attached: detach it "
				 "(ip link set dev %s xdp off) and retry", iface, iface);
		cb_fatal("cannot attach XDP in %s mode to %s: %s%s", mode, iface, strerror(-err),
			 !strcmp(mode, "native") ? " (try --mode generic)" : "");
	}

	/* Block the stop signals and wait for them with sigsuspend, so one
	 * arriving between the check and the wait is not lost. */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &waitmask);

	cb_json_begin(&j, "ready");
	cb_json_str(&j, "iface", iface);
	cb_json_str(&j, "mode", mode);
	cb_json_end(&j, stdout);

	while (!stop_requested)
		sigsuspend(&waitmask);

	err = read_counts(skel, &counts);
	close(link_fd); /* detaches the program */
	xdp_count_bpf__destroy(skel);
	if (err)
		cb_fatal("cannot read the XDP counters: %s", strerror(-err));

	cb_json_begin(&j, "summary");
	cb_json_str(&j, "iface", iface);
	cb_json_u64(&j, "packets", counts.packets);
	cb_json_u64(&j, "bytes", counts.bytes);
	cb_json_u64(&j, "capbench", counts.capbench);
	cb_json_end(&j, stdout);
	return CB_EXIT_OK;
}
