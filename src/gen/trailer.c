/* SPDX-License-Identifier: MIT */
/*
 * Trailer frames (stamp.h): once every lane has stopped and its sent count
 * is final, each stream gets cfg->trailer frames that carry its last
 * sequence number and that count, so a counter on its own can tell a lost
 * tail (the last frames of a stream leave no gap in the numbers it saw).
 *
 * They go out through one AF_PACKET socket for both engines, after a pause
 * of GEN_TRAILER_GAP_NS and the same gap between them: a counter still busy
 * with the stream's tail (its socket buffer full) has drained by then, so
 * the trailers are not lost with the tail, and one lost trailer does not
 * take the others with it. PACKET_QDISC_BYPASS hands them straight to the
 * driver, as the afpacket engine does; a full driver queue (ENOBUFS) is
 * retried a few times.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"
#include "util.h"

#define SEND_TRIES 100

static void pause_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	/* A SIGINT cuts the pause short: the trailers then leave at once. */
	nanosleep(&ts, NULL);
}

/* One frame, retried while the driver has no room. 1 sent, 0 not, -errno. */
static int send_one(int fd, const uint8_t *frame, size_t len)
{
	struct timespec busy = { 0, 100000 };

	for (int i = 0; i < SEND_TRIES; i++) {
		if (send(fd, frame, len, 0) == (ssize_t)len)
			return 1;
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			return -errno;
		nanosleep(&busy, NULL);
	}
	return 0;
}

int64_t gen_send_trailers(const struct gen_plan *plan, const struct gen_progress *lanes)
{
	const struct gen_cfg *cfg = &plan->total;
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_ifindex = cfg->ifindex };
	uint8_t frames[GEN_MAX_THREADS][CB_FRAME_MIN];
	int one = 1, fd, len = 0;
	int64_t sent = 0;

	for (unsigned int l = 0; l < plan->n; l++) {
		struct cb_frame_spec spec = plan->lanes[l].spec;
		uint64_t n = lanes[l].sent;

		/* The shortest frame: it fits every MTU the stream fitted. */
		spec.frame_len = CB_FRAME_MIN;
		len = cb_frame_build(&spec, frames[l], sizeof(frames[l]));
		if (len < 0)
			return len;
		cb_trailer_write(frames[l], n ? n - 1 : 0, n);
	}
	/* Protocol 0: this socket only sends. */
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0) {
		int err = -errno;

		fprintf(stderr, "capbench-gen: cannot send the trailer frames on %s: %s\n", cfg->iface,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return err;
	}
	for (unsigned int t = 0; t < cfg->trailer; t++) {
		pause_ns(GEN_TRAILER_GAP_NS);
		for (unsigned int l = 0; l < plan->n; l++) {
			int r = send_one(fd, frames[l], (size_t)len);

			if (r < 0) {
				fprintf(stderr, "capbench-gen: cannot send a trailer frame on %s: %s\n",
					cfg->iface, strerror(-r));
				close(fd);
				return r;
			}
			sent += r;
		}
	}
	close(fd);
	return sent;
}
