/* SPDX-License-Identifier: MIT */
/*
 * Engine "xdploop": XDP frames that circle a veth pair of the engine's own
 * and leave through the devmap, paced and stamped by BPF programs
 * (gen_loop.bpf.c says how). It needs no BPF_PROG_RUN, so it runs where the
 * xdp engine's live frames are missing (Linux < 5.18) or forbidden, and its
 * frames reach a veth peer's XDP program without the second copy every
 * socket sender's skb gets there (veth_xdp_rcv_skb).
 *
 * The pair lives in a network namespace that only this process's file
 * descriptors hold (loop_link.h): when the process ends, however it ends,
 * the kernel removes the namespace, the pair and its programs (attached
 * through bpf_links, which end with the process too).
 *
 * The loop runs in softirq on the CPU that seeded it: start() sends the
 * seed frames from a thread pinned to the lane's CPU. No thread of ours
 * sends; user space only reads the counters and sets the stop flag.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "gen.h"
#include "gen_loop.skel.h"
#include "bpf_log.h"
#include "loop_link.h"
#include "util.h"

#define LOOP_A "cbloop0" /* cb_loop_bounce */
#define LOOP_B "cbloop1" /* cb_loop_emit */
/* A veth's MTU below this is no use; above it the loop carries jumbo frames. */
#define LOOP_MTU_MIN 1500u
/* Copies still on their way to the interface when the stop flag is set
 * leave within the softirq that claimed them; wait this long for them. */
#define LOOP_SETTLE_NS 3000000ull
/* The loop ends by itself this long after the lane's time bound (the
 * program's own guard: the bpf_links and the namespace end it with the
 * process anyway). */
#define LOOP_GUARD_NS 30000000000ull

struct loop_state {
	const struct gen_cfg *cfg;
	struct gen_loop_bpf *skel;
	struct bpf_link *links[2];
	int ns_fd;   /* the loop's namespace */
	int seed_fd; /* AF_PACKET socket on LOOP_A, in that namespace */
	uint8_t frame[CB_FRAME_MAX];
	int frame_len;
	int started, stopped, err;
	uint64_t ended_at; /* when finished() first saw the count claimed */
	struct gen_progress final; /* after stop() */
};

static struct bpf_map *out_map(struct gen_loop_bpf *skel, unsigned int n)
{
	struct bpf_map *maps[GEN_LOOP_MAX_COPIES] = {
		skel->maps.out1, skel->maps.out2, skel->maps.out3, skel->maps.out4,
		skel->maps.out5, skel->maps.out6, skel->maps.out7, skel->maps.out8,
	};

	return maps[n - 1];
}

/* Put ifindex (resolved in the calling thread's namespace) at `key` of
 * every devmap that has that entry: entry 0 is the loop, 1..n the
 * interface with the stamping egress program. */
static int fill_out_maps(struct loop_state *st, uint32_t key, int ifindex, int prog_fd)
{
	struct bpf_devmap_val v = { .ifindex = (uint32_t)ifindex, .bpf_prog.fd = prog_fd };

	for (unsigned int n = key ? key : 1; n <= st->cfg->copies; n++)
		if (bpf_map_update_elem(bpf_map__fd(out_map(st->skel, n)), &key, &v, BPF_ANY))
			return -errno;
	return 0;
}

static int refuse(int err, const char *piece)
{
	return cb_user_fault(err, "the xdploop engine cannot %s here (%s): use --engine afpacket",
			     piece, strerror(-err));
}

static int load(struct loop_state *st)
{
	const struct gen_cfg *cfg = st->cfg;
	struct gen_loop_bpf *skel = gen_loop_bpf__open();
	unsigned int lanes = cfg->lanes ? cfg->lanes : 1;
	int err;

	if (!skel)
		return refuse(-errno, "open its BPF object");
	st->skel = skel;
	skel->rodata->pace_cfg = cfg->pace;
	skel->rodata->buf_len = (uint32_t)st->frame_len;
	skel->rodata->paced = (uint8_t)cfg->sched.paced;
	skel->rodata->vary_len = cfg->sched.min_len != cfg->sched.max_len;
	skel->rodata->copies = cfg->copies;
	skel->rodata->count_limit = cfg->count;
	skel->rodata->wire_lanes = lanes;
	skel->rodata->catchup_ns = gen_catchup_ns(cfg);
	if (cfg->duration_s > 0)
		skel->rodata->run_limit_ns = (uint64_t)(cfg->duration_s * 1e9) + LOOP_GUARD_NS;
	err = bpf_map__set_max_entries(skel->maps.schedule, cfg->sched.n);
	if (!err)
		err = gen_loop_bpf__load(skel);
	if (err == -ENOMEM)
		return fprintf(stderr, "capbench-gen: cannot load the loop's BPF programs: %s\n",
			       strerror(-err)), err;
	if (err)
		return refuse(err, "load its BPF programs (devmap egress programs need Linux >= 5.8)");
	err = gen_fill_schedule(bpf_map__fd(skel->maps.schedule), &cfg->sched);
	if (err)
		fprintf(stderr, "capbench-gen: cannot fill the schedule map: %s\n", strerror(-err));
	return err;
}

/* In the loop's namespace: the pair, its programs, the loop's devmap
 * entries and the seed socket. */
static int build_loop(struct loop_state *st)
{
	unsigned int mtu = (unsigned int)st->frame_len - CB_ETH_HLEN;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	int a, b, err;

	err = gen_loop_veth_add(LOOP_A, LOOP_B, mtu > LOOP_MTU_MIN ? mtu : LOOP_MTU_MIN);
	if (err)
		return refuse(err, "make its veth pair");
	a = (int)if_nametoindex(LOOP_A);
	b = (int)if_nametoindex(LOOP_B);
	if (!a || !b)
		return refuse(-ENODEV, "find its veth pair");
	err = load(st);
	if (err)
		return err;
	/* bpf_links: the programs end with the process, whatever ends it. */
	st->links[0] = bpf_program__attach_xdp(st->skel->progs.cb_loop_bounce, a);
	st->links[1] = st->links[0] ? bpf_program__attach_xdp(st->skel->progs.cb_loop_emit, b) : NULL;
	if (!st->links[1])
		return refuse(-errno, st->frame_len > 3000 ? "attach XDP to its veth pair (frames this long "
				"need a veth MTU XDP refuses)" : "attach XDP through a bpf_link (Linux >= 5.9)");
	err = fill_out_maps(st, 0, b, -1);
	if (err)
		return refuse(err, "fill its devmaps");
	st->seed_fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (st->seed_fd < 0)
		return refuse(-errno, "open a packet socket");
	sll.sll_ifindex = a;
	if (bind(st->seed_fd, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return refuse(-errno, "bind a packet socket to its veth pair");
	return 0;
}

static void loop_free(struct loop_state *st)
{
	for (int i = 0; i < 2; i++)
		bpf_link__destroy(st->links[i]);
	gen_loop_bpf__destroy(st->skel);
	if (st->seed_fd >= 0)
		close(st->seed_fd);
	if (st->ns_fd >= 0)
		close(st->ns_fd);
	free(st);
}

/* A loop for `cfg` (its pair, programs, loop entries and seed socket),
 * built in a namespace of its own; the calling thread is left there and
 * *orig_fd refers to the namespace it came from. NULL after one line. */
static struct loop_state *loop_new(const struct gen_cfg *cfg, int *orig_fd, int *err)
{
	struct loop_state *st = calloc(1, sizeof(*st));

	if (!st) {
		*err = -ENOMEM;
		return NULL;
	}
	st->cfg = cfg;
	st->seed_fd = st->ns_fd = -1;
	cb_libbpf_quiet();
	st->frame_len = cb_frame_build(&cfg->spec, st->frame, sizeof(st->frame));
	*err = st->frame_len < 0 ? st->frame_len : gen_loop_ns_new(orig_fd, &st->ns_fd);
	if (*err) {
		if (st->frame_len >= 0)
			refuse(*err, "make a network namespace of its own");
		loop_free(st);
		return NULL;
	}
	*err = build_loop(st);
	return st;
}

/* Back to the namespace the thread came from (loop_new). */
static int loop_leave(int orig_fd)
{
	int err = setns(orig_fd, CLONE_NEWNET) < 0 ? -errno : 0;

	close(orig_fd);
	return err;
}

static int loop_open(const struct gen_cfg *cfg, void **state)
{
	int orig_fd, err, left;
	struct loop_state *st = loop_new(cfg, &orig_fd, &err);

	if (!st)
		return err;
	/* Back where --iface is: its devmap entries resolve the index there. */
	left = loop_leave(orig_fd);
	if (left && !err)
		err = left, fprintf(stderr, "capbench-gen: cannot return to the network namespace of %s: %s\n",
				    cfg->iface, strerror(-left));
	if (!err) {
		for (uint32_t k = 1; !err && k <= cfg->copies; k++)
			err = fill_out_maps(st, k, cfg->ifindex, bpf_program__fd(st->skel->progs.cb_loop_stamp));
		if (err)
			cb_user_fault(err, "cannot put %s into the loop's devmap (%s): it must be an interface "
				      "that takes XDP frames (ndo_xdp_xmit), or use --engine afpacket",
				      cfg->iface, strerror(-err));
	}
	if (err) {
		loop_free(st);
		return err;
	}
	*state = st;
	return 0;
}

/* Seed the loop from the lane's CPU: the veth pair's NAPI runs where the
 * first frame was sent, and stays there. */
static void *seed_thread(void *arg)
{
	struct loop_state *st = arg;

	if (st->cfg->cpu >= 0)
		cb_pin_cpu(st->cfg->cpu);
	for (unsigned int i = 0; i < st->cfg->loop_frames; i++)
		if (send(st->seed_fd, st->frame, (size_t)st->frame_len, 0) < 0) {
			st->err = -errno;
			break;
		}
	return NULL;
}

static int loop_start(void *state)
{
	struct loop_state *st = state;
	pthread_t t;
	int err = pthread_create(&t, NULL, seed_thread, st);

	if (err)
		return -err;
	pthread_join(t, NULL);
	st->started = 1;
	return st->err;
}

static void loop_progress(void *state, struct gen_progress *p)
{
	struct loop_state *st = state;
	struct gen_loop_bpf__bss *b = st->skel->bss;

	if (st->stopped) {
		*p = st->final;
		return;
	}
	GEN_PROGRESS_FROM_BSS(p, b);
}

/* The count is claimed and what was claimed has left (or been refused). */
static int loop_finished(void *state)
{
	struct loop_state *st = state;
	uint64_t claimed = __atomic_load_n(&st->skel->bss->claimed, __ATOMIC_ACQUIRE);

	if (st->stopped || !st->cfg->count || claimed < st->cfg->count)
		return st->stopped;
	if (!st->ended_at)
		st->ended_at = cb_now_ns();
	return cb_now_ns() - st->ended_at >= LOOP_SETTLE_NS;
}

static int loop_stop(void *state)
{
	struct loop_state *st = state;
	struct timespec settle = { 0, (long)LOOP_SETTLE_NS };
	uint64_t claimed;

	if (st->stopped || !st->started)
		return 0;
	__atomic_store_n(&st->skel->bss->stop, 1, __ATOMIC_RELEASE);
	nanosleep(&settle, NULL);
	loop_progress(st, &st->final);
	claimed = __atomic_load_n(&st->skel->bss->claimed, __ATOMIC_ACQUIRE);
	st->final.refused = claimed > st->final.sent ? claimed - st->final.sent : 0;
	st->stopped = 1;
	return 0;
}

static void loop_close(void *state)
{
	loop_stop(state);
	loop_free(state);
}

/* --check --probe: every piece the engine uses, end to end inside a loop of
 * its own, sending nothing out of it: the pair, the programs, bpf_links, a
 * devmap entry with an egress program and a broadcast redirect. The
 * "interface" is the loop's own LOOP_A: one frame is claimed, stamped there
 * and comes back to the loop, which then ends. */
static int loop_probe(const struct gen_cfg *cfg)
{
	struct gen_cfg one = *cfg;
	struct timespec pause = { 0, 1000000 };
	struct loop_state *st;
	int orig_fd, err;

	one.count = 1;
	one.copies = 1;
	one.loop_frames = 1;
	one.cpu = -1;
	st = loop_new(&one, &orig_fd, &err);
	if (!st)
		return err;
	if (!err) {
		err = fill_out_maps(st, 1, (int)if_nametoindex(LOOP_A),
				    bpf_program__fd(st->skel->progs.cb_loop_stamp));
		if (err)
			refuse(err, "give a devmap entry an egress program (Linux >= 5.8)");
	}
	if (!err)
		err = loop_start(st);
	for (int i = 0; !err && i < 200 && !st->skel->bss->sent; i++)
		nanosleep(&pause, NULL);
	if (!err && !st->skel->bss->sent)
		err = refuse(-EOPNOTSUPP, st->skel->bss->passes ? "redirect to several interfaces at once "
			     "(BPF_F_BROADCAST, Linux >= 5.14)" : "bounce frames between its veth pair");
	loop_leave(orig_fd);
	loop_free(st);
	return err;
}

static const struct cb_opt loop_options[] = {
	{ .name = "loop-frames", .type = CB_OPT_COUNT, .arg = "K", .min = 1, .max = GEN_LOOP_MAX_FRAMES,
	  .has_default = 1, .def = 8, .help = "frames circling the loop: each pass of one may send",
	  CB_OPT_AT(struct gen_args, loop_frames) },
	{ .name = "copies", .type = CB_OPT_COUNT, .arg = "M", .min = 1, .max = GEN_LOOP_MAX_COPIES,
	  .has_default = 1, .def = 8, .help = "frames one pass may send (the interface's entries in the "
	  "devmap); K x M above 64 overflows a veth peer's 256-frame ring",
	  CB_OPT_AT(struct gen_args, copies) },
	CB_OPT_END,
};

const struct gen_engine gen_engine_xdploop = {
	.name = "xdploop",
	.describe = "XDP frames circling a veth pair of its own, sent through a devmap, paced in BPF "
		    "programs (no BPF_PROG_RUN: Linux >= 5.14)",
	.seed = "line rate where live frames are missing or forbidden: a socket's frames cost a veth "
		"peer's XDP a second copy, XDP frames do not",
	.options = loop_options,
	.caps = { .pacing = "kernel", .refusals = "lost", .sends_from = "softirq", .own_netns = 1, .needs = { "xdp_loop" } },
	.probe = loop_probe,
	.open = loop_open,
	.start = loop_start,
	.progress = loop_progress,
	.finished = loop_finished,
	.stop = loop_stop,
	.close = loop_close,
};
