/* SPDX-License-Identifier: MIT */
/*
 * Engine "afpacket": an AF_PACKET socket with PACKET_QDISC_BYPASS, frames
 * sent in batches with sendmmsg and paced in user space. For interfaces
 * where XDP redirect does not work.
 *
 * PACKET_QDISC_BYPASS hands each frame straight to the driver's xmit, so
 * there is no qdisc queue to hide drops in: when the driver has no room the
 * send fails with ENOBUFS and we retry the same sequence numbers, so
 * "sent" counts only frames the kernel accepted.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "pacing.h"
#include "util.h"

#define AFP_BATCH 32
/* Waits longer than this sleep instead of spinning, waking this much early. */
#define SLEEP_THRESHOLD_NS 200000ull

struct afp_state {
	const struct gen_cfg *cfg;
	int fd;
	int frame_len;
	int vary_len;     /* the schedule has more than one length */
	uint8_t frames[AFP_BATCH][CB_FRAME_MAX];
	struct iovec iov[AFP_BATCH];
	struct mmsghdr msgs[AFP_BATCH];
	pthread_t thread;
	int running;
	int stop;  /* atomic */
	int done;  /* atomic */
	int err;
	struct gen_progress prog; /* written by the thread, fields read atomically */
};

static int afp_open(const struct gen_cfg *cfg, void **state)
{
	struct afp_state *st = calloc(1, sizeof(*st));
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = cfg->ifindex };
	int one = 1, err;

	if (!st)
		return -ENOMEM;
	st->cfg = cfg;
	st->vary_len = cfg->sched.min_len != cfg->sched.max_len;
	for (int i = 0; i < AFP_BATCH; i++) {
		st->frame_len = cb_frame_build(&cfg->spec, st->frames[i], CB_FRAME_MAX);
		if (st->frame_len < 0) {
			err = st->frame_len;
			goto err_free;
		}
		st->iov[i].iov_base = st->frames[i];
		st->iov[i].iov_len = (size_t)st->frame_len;
		st->msgs[i].msg_hdr.msg_iov = &st->iov[i];
		st->msgs[i].msg_hdr.msg_iovlen = 1;
	}
	/* Protocol 0: this socket only sends, it receives nothing. */
	st->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (st->fd < 0) {
		err = -errno;
		/* Without CAP_NET_RAW (EPERM, EACCES): the user's to fix. */
		if (err == -EPERM || err == -EACCES)
			cb_user_fault(err, "cannot open an AF_PACKET socket (%s): run as root",
				      strerror(-err));
		else
			fprintf(stderr, "capbench-gen: cannot open an AF_PACKET socket: %s\n",
				strerror(-err));
		goto err_free;
	}
	if (bind(st->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		err = -errno;
		/* The interface went away since the options were read. */
		if (err == -ENODEV)
			cb_user_fault(err, "cannot bind to %s: %s", cfg->iface, strerror(-err));
		else
			fprintf(stderr, "capbench-gen: cannot bind to %s: %s\n", cfg->iface,
				strerror(-err));
		goto err_close;
	}
	if (setsockopt(st->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0) {
		err = -errno;
		fprintf(stderr, "capbench-gen: PACKET_QDISC_BYPASS: %s\n", strerror(errno));
		goto err_close;
	}
	*state = st;
	return 0;

err_close:
	close(st->fd);
err_free:
	free(st);
	return err;
}

static void wait_until(uint64_t due_ns)
{
	uint64_t now = cb_now_ns();

	if (due_ns > now + SLEEP_THRESHOLD_NS) {
		uint64_t t = due_ns - SLEEP_THRESHOLD_NS / 2;
		struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while (cb_now_ns() < due_ns)
		;
}

/* The lane's pacing state (pacing.h): the next departure, the link's
 * theoretical departure time for the catch-up rule, the lag counts. */
struct afp_pace {
	struct cb_pace_state cur;
	uint64_t start, wire_tat, catchup_ns;
	unsigned long long late, max_lag; /* pacing.h's types */
};

/* When the next frame may leave: its departure, or later while a lane
 * that fell behind has used up its --catch-up. */
static uint64_t next_departure(const struct afp_pace *pc)
{
	uint64_t due = pc->start + (pc->cur.due_fp16 >> 16);

	return pc->wire_tat > pc->catchup_ns + due ? pc->wire_tat - pc->catchup_ns : due;
}

/* Fill the batch with the frames that may leave at `now` (paced: due, and
 * within the catch-up, pacing.h's cb_gen_due) or a full batch (unpaced),
 * never beyond the count: each gets its schedule length, its sequence number
 * and the send time. Returns how many. */
static unsigned int prepare_batch(struct afp_state *st, const struct afp_pace *pc, uint64_t sent,
				  uint64_t now)
{
	const struct gen_cfg *cfg = st->cfg;
	const struct cb_schedule *sched = &cfg->sched;
	struct afp_pace c = *pc;
	unsigned int n = 0;

	while (n < AFP_BATCH && (!cfg->count || sent + n < cfg->count)) {
		const struct cb_sched_entry *e = &sched->e[c.cur.idx];

		if (sched->paced && !cb_gen_due(now, c.start, &c.cur, e, c.catchup_ns, c.wire_tat,
						&c.late, &c.max_lag) && n)
			break;
		c.wire_tat = cb_gen_wire_tat(c.wire_tat, now, e, cfg->lanes ? cfg->lanes : 1);
		if (cfg->replay) {
			/* A captured frame goes out as it was: no stamp. */
			st->iov[n].iov_base = cfg->replay->buf + cfg->replay->off[c.cur.idx];
			st->iov[n].iov_len = cfg->replay->len[c.cur.idx];
		} else {
			if (st->vary_len)
				cb_frame_set_len(st->frames[n], e->len);
			st->iov[n].iov_len = e->len - CB_FCS_LEN;
			cb_stamp_write(st->frames[n], sent + n, now);
		}
		cb_pace_advance(&cfg->pace, &c.cur, e, sent + n);
		n++;
	}
	return n;
}

static void *afp_thread(void *arg)
{
	struct afp_state *st = arg;
	const struct gen_cfg *cfg = st->cfg;
	const struct cb_schedule *sched = &cfg->sched;
	struct gen_progress *p = &st->prog;
	struct afp_pace pc = { .catchup_ns = gen_catchup_ns(cfg) };
	uint64_t sent = 0, wire_bytes = 0, last_due_fp16 = 0;

	if (cfg->cpu >= 0)
		cb_pin_cpu(cfg->cpu); /* checked by main, which pinned itself first */
	pc.start = cb_now_ns();

	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		uint64_t now;
		unsigned int n;
		int r;

		if (cfg->count && sent >= cfg->count)
			break;
		if (sched->paced)
			wait_until(next_departure(&pc));
		now = cb_now_ns();
		n = prepare_batch(st, &pc, sent, now);
		r = sendmmsg(st->fd, st->msgs, n, 0);
		if (r < 0) {
			if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
				__atomic_fetch_add(&p->tx_busy, 1, __ATOMIC_RELAXED);
				continue;
			}
			st->err = -errno;
			fprintf(stderr, "capbench-gen: sendmmsg on %s: %s\n", cfg->iface,
				strerror(errno));
			break;
		}
		/* Only the r frames the kernel took advance the schedule; the rest
		 * go again with the same sequence numbers and lengths. */
		for (int i = 0; i < r; i++) {
			const struct cb_sched_entry *e = &sched->e[pc.cur.idx];

			if (sched->paced)
				cb_gen_due(now, pc.start, &pc.cur, e, 0, 0, &pc.late, &pc.max_lag);
			pc.wire_tat = cb_gen_wire_tat(pc.wire_tat, now, e, cfg->lanes ? cfg->lanes : 1);
			wire_bytes += e->len + CB_WIRE_OVERHEAD;
			last_due_fp16 = pc.cur.due_fp16;
			cb_pace_advance(&cfg->pace, &pc.cur, e, sent + i);
		}
		if (!sent && r > 0)
			__atomic_store_n(&p->first_tx_ns, now, __ATOMIC_RELAXED);
		if (r > 0) {
			__atomic_store_n(&p->last_tx_ns, now, __ATOMIC_RELAXED);
			__atomic_store_n(&p->last_due_ns, last_due_fp16 >> 16, __ATOMIC_RELAXED);
		}
		sent += (uint64_t)r;
		__atomic_store_n(&p->late, pc.late, __ATOMIC_RELAXED);
		__atomic_store_n(&p->max_lag_ns, pc.max_lag, __ATOMIC_RELAXED);
		__atomic_store_n(&p->wire_bytes, wire_bytes, __ATOMIC_RELAXED);
		__atomic_store_n(&p->sent, sent, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&st->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int afp_start(void *state)
{
	struct afp_state *st = state;
	int err = pthread_create(&st->thread, NULL, afp_thread, st);

	if (err)
		return -err;
	st->running = 1;
	return 0;
}

static void afp_progress(void *state, struct gen_progress *p)
{
	struct afp_state *st = state;

	p->sent = __atomic_load_n(&st->prog.sent, __ATOMIC_ACQUIRE);
	p->wire_bytes = __atomic_load_n(&st->prog.wire_bytes, __ATOMIC_RELAXED);
	p->first_tx_ns = __atomic_load_n(&st->prog.first_tx_ns, __ATOMIC_RELAXED);
	p->last_tx_ns = __atomic_load_n(&st->prog.last_tx_ns, __ATOMIC_RELAXED);
	p->last_due_ns = __atomic_load_n(&st->prog.last_due_ns, __ATOMIC_RELAXED);
	p->late = __atomic_load_n(&st->prog.late, __ATOMIC_RELAXED);
	p->max_lag_ns = __atomic_load_n(&st->prog.max_lag_ns, __ATOMIC_RELAXED);
	p->tx_busy = __atomic_load_n(&st->prog.tx_busy, __ATOMIC_RELAXED);
}

static int afp_finished(void *state)
{
	return __atomic_load_n(&((struct afp_state *)state)->done, __ATOMIC_ACQUIRE);
}

static int afp_stop(void *state)
{
	struct afp_state *st = state;

	if (!st->running)
		return 0;
	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	pthread_join(st->thread, NULL);
	st->running = 0;
	return st->err;
}

static void afp_close(void *state)
{
	struct afp_state *st = state;

	afp_stop(st);
	close(st->fd);
	free(st);
}

static const struct cb_opt afp_options[] = {
	{ .name = "replay", .type = CB_OPT_STRING, .arg = "FILE",
	  .help = "send the frames of a pcap/pcapng capture as they are (not stamped: the counter "
		  "counts them as foreign); --rate original keeps their timing, a "
		  "rate paces them, max sends them at once", CB_OPT_AT(struct gen_args, replay) },
	{ .name = "loop", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = CB_COUNT_MAX,
	  .has_default = 1, .def = 1, .help = "send the capture N times",
	  CB_OPT_AT(struct gen_args, loop) },
	CB_OPT_END,
};

const struct gen_engine gen_engine_afpacket = {
	.name = "afpacket",
	.describe = "AF_PACKET sendmmsg with PACKET_QDISC_BYPASS, paced in user space",
	.seed = "a generator for interfaces where XDP redirect does not work, and for replaying captures",
	.options = afp_options,
	.caps = { .pacing = "user", .refusals = "retried", .sends_from = "thread", .replay = 1, .needs = { "packet_socket" } },
	.open = afp_open,
	.start = afp_start,
	.progress = afp_progress,
	.finished = afp_finished,
	.stop = afp_stop,
	.close = afp_close,
};
