/* SPDX-License-Identifier: MIT */
/*
 * Backend "fanout": --workers threads, each with its own AF_PACKET socket and
 * TPACKET_V3 ring (tpacket_v3.c), all joined into one PACKET_FANOUT group:
 * TNAPI's per-queue capture threads (seed 001) as Linux offers them.
 *
 * A fanout group replaces its members' individual packet hooks with one
 * hook that hands each packet to exactly one member, chosen by the mode:
 * hash (of the flow, so a flow stays on one socket), lb (round robin over
 * the members), cpu (the CPU that received the packet), qm (the receive
 * queue), rollover (one member until its ring is full, then the next).
 * A frame therefore reaches one worker only; the workers' counts add up,
 * and the main thread still merges their sequence numbers as a union
 * (seqmerge.h), so nothing would be counted twice if that ever changed.
 *
 * Groups are per network namespace, named by a 16-bit id. The sockets must
 * all be bound to the same interface and protocol before they join, with
 * the same mode and flags. The first socket asks for
 * PACKET_FANOUT_FLAG_UNIQUEID with id 0: the kernel picks an id no group in
 * the namespace uses (so several counters on one interface do not join each
 * other's groups; 0 is a valid id), and getsockopt(PACKET_FANOUT) reads it
 * back. The flag is not kept in the group, so the others join with that id
 * and no flag.
 * The group goes away when its last socket is closed.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cap.h"
#include "tpacket_v3.h"
#include "util.h"

static const struct cb_opt_choice fanout_modes[] = {
	{ "hash", PACKET_FANOUT_HASH },
	{ "lb", PACKET_FANOUT_LB },
	{ "cpu", PACKET_FANOUT_CPU },
	{ "qm", PACKET_FANOUT_QM },
	{ "rollover", PACKET_FANOUT_ROLLOVER },
	{ NULL, 0 },
};

static const char *mode_name(int mode)
{
	const char *name = cb_opt_choice_name(fanout_modes, mode);

	return name ? name : "?";
}

struct fanout {
	unsigned int n;          /* rings opened */
	int mode;                /* PACKET_FANOUT_* */
	struct v3_ring ring[];   /* one per worker */
};

static void fanout_close(void *state)
{
	struct fanout *st = state;

	for (unsigned int i = 0; i < st->n; i++)
		v3_ring_close(&st->ring[i]);
	free(st);
}

/* Join socket `fd` to the group. The first socket (first != 0) creates it
 * and learns its id; the others join that id. The kernel hands out unique
 * ids from a counter that starts at 0 and wraps, so 0 is an id like any
 * other, not "no group". */
static int join_group(int fd, int mode, int first, unsigned int *id)
{
	uint32_t arg = (uint32_t)mode << 16;
	socklen_t len = sizeof(arg);

	if (first)
		arg |= (uint32_t)PACKET_FANOUT_FLAG_UNIQUEID << 16;
	else
		arg |= *id;
	if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof(arg)) < 0)
		return -errno;
	if (first) {
		/* Answers id | mode << 16 (| flags << 24). */
		if (getsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, &len) < 0)
			return -errno;
		*id = arg & 0xffff;
	}
	return 0;
}

static int fanout_open(const struct cap_cfg *cfg, void **state)
{
	struct fanout *st = calloc(1, sizeof(*st) + cfg->workers * sizeof(st->ring[0]));
	unsigned int id = 0;
	int err;

	if (!st)
		return -ENOMEM;
	st->mode = cfg->fanout_mode;
	for (unsigned int i = 0; i < cfg->workers; i++) {
		err = v3_ring_open(cfg, &st->ring[i]);
		if (err)
			goto err_close;
		st->n++;
		err = join_group(st->ring[i].fd, cfg->fanout_mode, i == 0, &id);
		/* A mode or group the kernel does not take is the user's choice
		 * to change; ENOMEM (no room for the group) is a failure. */
		if (err == -ENOMEM) {
			fprintf(stderr, "capbench-cap: socket %u cannot join a %s fanout group on %s: %s\n",
				i, mode_name(cfg->fanout_mode), cfg->iface, strerror(-err));
			goto err_close;
		}
		if (err) {
			cb_user_fault(err, "socket %u cannot join a %s fanout group on %s (%s): use another "
				      "--fanout-mode or --backend afp-v3", i,
				      mode_name(cfg->fanout_mode), cfg->iface, strerror(-err));
			goto err_close;
		}
	}
	*state = st;
	return 0;

err_close:
	fanout_close(st);
	return err;
}

static int fanout_run(void *state, struct cap_worker *w)
{
	struct fanout *st = state;

	return v3_ring_run(&st->ring[w->index], w);
}

static void fanout_stats(void *state, struct cap_kstats *out)
{
	struct fanout *st = state;

	memset(out, 0, sizeof(*out));
	for (unsigned int i = 0; i < st->n; i++) {
		const struct cap_kstats *k = &st->ring[i].kstats;

		v3_ring_stats(&st->ring[i]);
		out->packets += k->packets;
		out->drops += k->drops;
		out->freeze_q += k->freeze_q;
		out->has_freeze_q = k->has_freeze_q;
	}
	out->account[0] = out->drops;
}

/*
 * Stopping: the workers stop at slightly different times, and while
 * traffic still flows the kernel keeps handing frames to every socket. A
 * worker that has already left its loop would miss frames numbered below
 * ones another worker still reads, and the union would count them as lost
 * (at 1 Mpps, a few ms of difference are thousands of frames). So before
 * the workers drain, every socket gets a filter that accepts nothing: the
 * kernel then queues no new frame on any of them (a filtered frame is not
 * counted in PACKET_STATISTICS), and each worker drains what was queued
 * before the cut. What remains is the few microseconds between the first
 * and the last setsockopt(); with the traffic over, as in a trial, there is
 * nothing left to cut.
 */
static void fanout_wake(void *state)
{
	struct fanout *st = state;
	struct sock_filter drop_all[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = drop_all };

	for (unsigned int i = 0; i < st->n; i++)
		setsockopt(st->ring[i].fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

static void fanout_worker_stats(void *state, unsigned int worker, struct cap_kstats *out)
{
	*out = ((struct fanout *)state)->ring[worker].kstats;
	out->account[0] = out->drops;
}

/* One ring per worker, all mapped at once. */
static uint64_t fanout_ring_bytes(const struct cap_cfg *cfg, unsigned int *sockets, char *what, size_t len)
{
	uint32_t size, count;
	uint64_t bytes = v3_ring_geometry(cfg, &size, &count);

	*sockets = cfg->workers;
	if (cfg->workers == 1)
		snprintf(what, len, "a ring of %" PRIu32 " blocks of %" PRIu32 " B", count, size);
	else
		snprintf(what, len, "%u rings (one per worker) of %" PRIu32 " blocks of %" PRIu32 " B",
			 cfg->workers, count, size);
	return bytes;
}

static void fanout_summary(void *state, struct cb_json *j)
{
	cb_json_str(j, "fanout_mode", mode_name(((struct fanout *)state)->mode));
}

static const struct cb_opt fanout_options[] = {
	V3_RING_OPTIONS,
	{ .name = "workers", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = CAP_MAX_WORKERS,
	  .has_default = 1, .def = 1, .def_text = "1, or one per --worker-cpus",
	  .help = "worker threads, one socket and ring each; more than the CPUs share them",
	  .fix = "give 1..256 (a fanout group holds at most 256 sockets)",
	  .tunable = 1, .tune_max = 4, CB_OPT_AT(struct cap_cfg, workers) },
	{ .name = "worker-cpus", .type = CB_OPT_CPUS, .arg = "LIST", .has_default = 1,
	  .def_text = "consecutive CPUs from --cpu or 0, wrapping around",
	  .help = "pin worker i to the i-th CPU of LIST (0,1 or 0-3)" },
	{ .name = "fanout-mode", .type = CB_OPT_CHOICE, .arg = "MODE", .choices = fanout_modes,
	  .has_default = 1, .def = PACKET_FANOUT_HASH,
	  .help = "how the kernel spreads packets over the workers: hash (of the flow), lb (round "
		  "robin), cpu (the receiving CPU), qm (the receive queue), rollover (stay on one "
		  "worker, move on when its ring is full)", .tunable = 1,
	  CB_OPT_AT(struct cap_cfg, fanout_mode) },
	CB_OPT_END,
};

static const struct cap_ring_map fanout_ring = {
	.count_option = "--block-count", .unit_bytes = V3_DEFAULT_BLOCK_SIZE,
	.unit_option = "--block-size",
};

/* Its loss account (account.h): the rings' sum in fanout_stats(), each
 * worker's ring in fanout_worker_stats(). */
static const struct cap_account_row fanout_account[] = {
	{ "socket", "PACKET_STATISTICS tp_drops",
	  "every block of the ring of the worker the fanout mode chose was still that worker's: the kernel "
	  "dropped the packet (it is not handed to another member unless the mode is rollover); the rings' "
	  "size (capbench --ring), the workers' speed and the mode's spread govern it" },
	{ .layer = NULL }, /* the end */
};

const struct cap_backend cap_backend_fanout = {
	.name = "fanout",
	.describe = "--workers threads, each its own TPACKET_V3 ring, in one PACKET_FANOUT group",
	.options = fanout_options,
	.seed = "TNAPI's per-queue capture threads (seed 001): one ring per worker, the kernel spreads the packets",
	.caps = { .queue_count = 1, .kernel_stats = "packet_statistics", .clock = CAP_CLOCK_KERNEL,
		  .filter = CAP_FILTER_SOCKET,
		  .workers = 1, .needs = { "packet_socket", "tpacket_v3", "fanout" } },
	.ring = &fanout_ring,
	.account = fanout_account,
	.summary = fanout_summary,
	.open = fanout_open,
	.run = fanout_run,
	.stats = fanout_stats,
	.worker_stats = fanout_worker_stats,
	.wake = fanout_wake,
	.close = fanout_close,
	.ring_bytes = fanout_ring_bytes,
	.ring_options = "use fewer or smaller blocks (--block-count, --block-size) or fewer --workers",
};
