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
#include "xdp_prog.h"

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
	struct cb_xdp_counts counts;
	char why[256];
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
	cb_require_root("attaching XDP needs CAP_NET_ADMIN and CAP_BPF");
	ifindex = cb_ifindex(iface);
	if (ifindex < 0)
		cb_usage_error("unknown interface '%s': check `ip link` (and the namespace)", iface);

	cb_libbpf_quiet();
	skel = xdp_count_bpf__open_and_load();
	if (!skel)
		cb_fatal("cannot load the XDP counter: %s", strerror(errno));

	link_fd = cb_xdp_attach(bpf_program__fd(skel->progs.cb_count), iface, ifindex,
				!strcmp(mode, "generic") ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE,
				why, sizeof(why));
	if (link_fd < 0) {
		xdp_count_bpf__destroy(skel);
		cb_fatal("%s", why);
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

	err = cb_xdp_read_counts(bpf_map__fd(skel->maps.counts), &counts);
	close(link_fd); /* detaches the program */
	xdp_count_bpf__destroy(skel);
	if (err)
		cb_fatal("cannot read the XDP counters: %s", strerror(-err));

	cb_json_begin(&j, "summary");
	cb_json_str(&j, "iface", iface);
	cb_json_u64(&j, "packets", counts.packets);
	cb_json_u64(&j, "bytes", counts.bytes);
	cb_json_u64(&j, "capbench", counts.capbench);
	cb_json_u64(&j, "trailer", counts.trailer);
	cb_json_end(&j, stdout);
	return CB_EXIT_OK;
}
