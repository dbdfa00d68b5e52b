/* SPDX-License-Identifier: MIT */
/* capbench-gen: the configuration every engine receives and the engine ops
 * table. An engine sends from its own thread; the main thread (gen.c) keeps
 * time, prints interval lines and tells the engine when to stop. */
#ifndef CAPBENCH_GEN_H
#define CAPBENCH_GEN_H

#include <stdint.h>

#include "opt_table.h"
#include "packet.h"
#include "pacing.h"
#include "replay.h"
#include "schedule.h"
#include "sizes.h"

struct gen_cfg {
	const char *iface;
	int ifindex;
	double link_bps;
	const char *size_spec;          /* --size as given */
	uint64_t seed;                  /* --seed of the size draw */
	struct cb_size_profile sizes;
	struct cb_schedule sched;       /* lengths and gaps; sched.paced 0 = unpaced */
	struct cb_pace_cfg pace;        /* bursts and groups */
	const struct gen_replay *replay; /* --replay: send these frames, unstamped */
	int replay_original;            /* ... with the capture's own timing */
	double pps;                     /* mean target; 0 = unpaced */
	double target_wire_bps;         /* bit-rate targets; 0 for packet rates and unpaced */
	uint64_t count;       /* frames to send (--count, or a paced --duration's); 0 = until stopped */
	double duration_s;    /* 0 = until stopped or count reached */
	unsigned int trailer; /* trailer frames per stream at the end (trailer.c) */
	double interval_s;
	int cpu;              /* -1 = not pinned; the engine's thread pins itself */
	unsigned int lanes;   /* sending threads sharing the link; each paces within its share */
	unsigned int catchup; /* frames a lane that fell behind may send faster than the link */
	unsigned int loop_frames, copies; /* the xdploop engine's K and M (engine_xdploop.c) */
	struct cb_frame_spec spec;      /* spec.frame_len: the schedule's longest frame */
};

/* The progress a BPF pacer keeps in its globals (the skeleton's mmap'd bss
 * `b`, with the fields of gen.bpf.c and gen_loop.bpf.c): the programs update
 * them from one CPU, aligned 64-bit loads are atomic, and sent is written last
 * for each frame. */
#define GEN_PROGRESS_FROM_BSS(p, b)                                                        \
	do {                                                                               \
		memset((p), 0, sizeof(*(p)));                                              \
		(p)->sent = __atomic_load_n(&(b)->sent, __ATOMIC_ACQUIRE);                 \
		(p)->wire_bytes = __atomic_load_n(&(b)->wire_bytes, __ATOMIC_RELAXED);     \
		(p)->first_tx_ns = __atomic_load_n(&(b)->first_tx_ns, __ATOMIC_RELAXED);   \
		(p)->last_tx_ns = __atomic_load_n(&(b)->last_tx_ns, __ATOMIC_RELAXED);     \
		(p)->last_due_ns = __atomic_load_n(&(b)->last_due_ns, __ATOMIC_RELAXED);   \
		(p)->late = __atomic_load_n(&(b)->late, __ATOMIC_RELAXED);                 \
		(p)->max_lag_ns = __atomic_load_n(&(b)->max_lag_ns, __ATOMIC_RELAXED);     \
	} while (0)

/* What an engine reports; all counts exact. */
struct gen_progress {
	uint64_t sent;
	uint64_t wire_bytes;  /* frame lengths incl. FCS + 20 B preamble and gap each */
	uint64_t first_tx_ns;
	uint64_t last_tx_ns;
	uint64_t last_due_ns; /* scheduled departure of the last frame sent, after the first */
	uint64_t late;        /* frames that left more than one gap late */
	uint64_t max_lag_ns;
	uint64_t tx_busy;     /* sends the kernel refused for lack of room (retried) */
	uint64_t refused;     /* frames due that the engine could not hand to the interface (lost
			       * before the wire: not in sent, no sequence number) */
};

/* How long capbench-gen sends without --duration, --count, --groups or
 * --replay (seconds; iperf3's -t): a run nobody bounded ends by itself. */
#define GEN_DURATION_DEFAULT_S 10

/* The command line as given, option by option (gen_config.c checks the
 * values); the option tables' rows point here. */
struct gen_args {
	const char *iface, *engine, *size, *rate, *link, *count, *duration;
	const char *cpu, *interval, *dst_mac, *src_mac, *seed;
	const char *threads, *cpus, *burst, *groups, *group_size, *group_gap;
	const char *replay, *loop, *mtu, *trailer, *catchup, *loop_frames, *copies;
	int check, probe, describe, help, version;
};

/* What an engine does, for --describe. */
struct gen_caps {
	const char *pacing;   /* where departures are timed: "kernel" (a BPF program) | "user" */
	int replay;           /* sends a capture's frames (--replay) */
	int own_netns;        /* makes a network namespace of its own (CAP_SYS_ADMIN) */
	/* What becomes of a frame the interface has no room for: "retried" (the
	 * engine sends it again, tx_busy) or "lost" (XDP frames: the driver
	 * drops it and counts it, a veth as tx_queue_N_xdp_xmit_errors). */
	const char *refusals;
	/* Where its frames are sent from: "thread" (a thread of capbench-gen,
	 * the CPU time of its process) or "softirq" (kernel work the engine only
	 * set going: the CPU's softirq, and its ksoftirqd once that defers). */
	const char *sends_from;
	const char *needs[4]; /* what preflight must find: live_frames, packet_socket */
};

struct gen_engine {
	const char *name;
	const char *describe;     /* one line: what it is */
	const char *seed;         /* one line: why capbench has it */
	const struct cb_opt *options; /* its own options (opt_table.h), into struct gen_args */
	struct gen_caps caps;
	/* Ask the kernel whether it runs this engine, sending nothing (--check
	 * --probe); NULL: there is nothing to ask beyond the privileges.
	 * Returns 0, or -errno after printing one line (cb_user_fault when the
	 * fix is the user's: another engine). */
	int (*probe)(const struct gen_cfg *cfg);
	/* Prepare everything that can fail on bad input or missing kernel
	 * support; returns 0 or -errno and may print one error line. */
	int (*open)(const struct gen_cfg *cfg, void **state);
	/* Start sending from a thread of the engine's own. */
	int (*start)(void *state);
	/* Progress so far; safe to call while sending. */
	void (*progress)(void *state, struct gen_progress *p);
	/* Nonzero once the engine stopped by itself (count reached, error). */
	int (*finished)(void *state);
	/* Stop sending and join the thread; returns the thread's error (0 or
	 * -errno). */
	int (*stop)(void *state);
	void (*close)(void *state);
};

/* The capabilities an engine needs (CB_CAP_* bits): CAP_NET_RAW for its
 * packet socket, CAP_NET_ADMIN and CAP_BPF when a BPF program paces (it loads
 * XDP programs), CAP_SYS_ADMIN when it makes a network namespace. */
uint64_t gen_engine_caps(const struct gen_engine *e);

/* The registry of engines, NULL-terminated (gen_config.c). */
extern const struct gen_engine *const gen_engines[];

#define GEN_MAX_THREADS 64

/* The xdploop engine (engine_xdploop.c): its devmaps hold the interface at
 * most this many times (gen_loop.bpf.c's LOOP_MAX_COPIES), and its loop at
 * most this many frames (a veth ring holds 256). */
#define GEN_LOOP_MAX_COPIES 8u
#define GEN_LOOP_MAX_FRAMES 128u

/* --catch-up: a veth's receive ring (VETH_RING_SIZE) and a small NIC's hold
 * 256 frames; a catch-up burst beyond what the receiver can buffer would be
 * loss no link of that speed could cause. */
#define GEN_CATCHUP_DEFAULT 256u
#define GEN_CATCHUP_MAX 1000000u
/* The lowest paced rate: below one frame a second a trial measures nothing
 * a capture could lose, and the gaps of slower rates only grow toward the
 * 78-hour wrap of the departure times (pacing.h). */
#define GEN_RATE_MIN_PPS 1.0

/* Trailer frames (stamp.h): --trailer's default and limit. */
#define GEN_TRAILER_DEFAULT 3u
#define GEN_TRAILER_MAX 100u

/* What to send: `total` holds the options as given (total rate and count),
 * each lane one sending thread's share with its own stream and schedule. */
struct gen_plan {
	const struct gen_engine *engine;
	struct gen_cfg total;
	struct gen_replay replay;
	unsigned int n;
	struct gen_cfg lanes[GEN_MAX_THREADS];
	int check_only;          /* --check: print the plan's "check" line, send nothing */
	int probe;               /* --probe (with --check): ask the kernel first (engine->probe) */
	int default_duration;    /* bounded by GEN_DURATION_DEFAULT_S: nothing else said how long */
};

/* capbench-gen --describe (docs/programs.md): the engines, size profiles
 * and options as one JSON document; returns 0 or -EIO. */
#define GEN_DESCRIBE_VERSION 1
int gen_describe(FILE *out);

/* gen_config.c: parse and check the command line (exits 2 on bad input). */
void gen_configure(int argc, char **argv, struct gen_plan *plan);
void gen_plan_free(struct gen_plan *plan);

/* schedule_map.c: copy the schedule into a BPF program's array map (its
 * entries 0..n-1, sized before load). Returns 0 or -errno. */
int gen_fill_schedule(int map_fd, const struct cb_schedule *sched);

/* --catch-up as wire time: cfg->catchup frames of the mean length, at the
 * link's rate, times the lanes that share the link (pacing.h, cb_gen_due). */
uint64_t gen_catchup_ns(const struct gen_cfg *cfg);

/* trailer.c: send cfg->trailer trailer frames for each lane's stream, the
 * first GEN_TRAILER_GAP_NS after the last data frame and each the same gap
 * after the previous one. Returns the trailer frames the kernel took (all
 * lanes) or -errno with one line on stderr. */
#define GEN_TRAILER_GAP_NS 50000000ull
int64_t gen_send_trailers(const struct gen_plan *plan, const struct gen_progress *lanes);

/* Why the generator stopped (gen_print_summary's "stopped_by"). */
enum gen_stop { GEN_STOP_COUNT, GEN_STOP_DURATION, GEN_STOP_DEADLINE, GEN_STOP_SIGNAL,
		GEN_STOP_ERROR };

/* gen_report.c: the JSON Lines. An interval line: the tick's wall-clock
 * time at_ns (cb_tick_take), t_s since the start, rates over dt_s. */
void gen_progress_add(struct gen_progress *sum, const struct gen_progress *p);
void gen_print_interval(uint64_t at_ns, double t_s, const struct gen_progress *p,
			const struct gen_progress *prev, double dt_s);
void gen_print_check(const struct gen_plan *plan);
struct gen_end {
	enum gen_stop stopped_by;
	int64_t trailer_sent;   /* trailer frames the kernel took; < 0: -errno */
	double wall_s;
	int err;
};
void gen_print_summary(const struct gen_plan *plan, const struct gen_progress *lanes,
		       const struct gen_end *end);

#endif
