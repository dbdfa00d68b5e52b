/* SPDX-License-Identifier: MIT */
/*
 * capbench-witness: the host's interference on some CPUs, for as long as it
 * runs (capbench starts one per run, python/capbench/trial/witness.py).
 *
 * It loads witness.bpf.c: each CPU's run time split into the trial's
 * (capbench's run cgroup, --cgroup, and the pids a snapshot names), idle and
 * others' (by thread name), and a canary timer on each CPU of --cpus whose
 * late firings are the CPU's stops. On each line "snapshot [PID...]" read on
 * stdin it prints one JSON line with what each CPU of --cpus saw since the
 * previous snapshot (the first: since it started), then takes PID... as the
 * trial's from now on. It ends at the end of stdin, SIGINT or SIGTERM.
 *
 * What it costs: a firing of the canary is a timer interrupt and a few
 * hundred nanoseconds of BPF, every --period-us on each CPU of --cpus (the
 * CPUs then never sleep longer); a context switch runs cb_switch once.
 * docs/programs.md has the figures measured here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf_log.h"
#include "jsonl.h"
#include "util.h"
#include "witness.h"
#include "witness.skel.h"

#define WITNESS_CAPS (CB_CAP_BPF | CB_CAP_PERFMON)
#define MAX_CPUS 1024
/* The most CPUs watched: a snapshot's line (cb_json's 256 KiB) holds ~700 bytes per CPU. */
#define MAX_WATCHED 256
/* Per CPU and snapshot: the longest stops listed, the others' names listed. */
#define STOPS_LISTED 32
#define NAMES_LISTED 5
#define PERIOD_US_MIN 50
#define PERIOD_US_MAX 100000
#define LINE_MAX 4096

struct cpu_stops {
	unsigned long long count, total_ns, longest_ns;
	unsigned long long listed[STOPS_LISTED]; /* the longest, longest first */
	unsigned int n_listed;
};

struct name_ns {
	char comm[16];
	unsigned long long ns;
};

struct cpu_view {
	int cpu;
	struct cb_witness_cpu last; /* the totals at the previous snapshot */
	struct cpu_stops stops;
	struct name_ns top[NAMES_LISTED];
	unsigned int n_top;
	unsigned long long others_named_ns;
};

static struct cpu_view views[MAX_CPUS];
static int n_views;
static int view_of_cpu[MAX_CPUS];

static void add_stop(struct cpu_stops *s, unsigned long long ns)
{
	unsigned int i;

	s->count++;
	s->total_ns += ns;
	if (ns > s->longest_ns)
		s->longest_ns = ns;
	if (s->n_listed < STOPS_LISTED)
		s->n_listed++;
	else if (ns <= s->listed[STOPS_LISTED - 1])
		return;
	for (i = s->n_listed - 1; i > 0 && s->listed[i - 1] < ns; i--)
		s->listed[i] = s->listed[i - 1];
	s->listed[i] = ns;
}

static int on_stop(void *ctx, void *data, size_t size)
{
	const struct cb_witness_stop *s = data;

	(void)ctx;
	if (size >= sizeof(*s) && s->cpu < MAX_CPUS && view_of_cpu[s->cpu] >= 0)
		add_stop(&views[view_of_cpu[s->cpu]].stops, s->stop_ns);
	return 0;
}

static void add_name(struct cpu_view *v, const char *comm, unsigned long long ns)
{
	unsigned int i;

	v->others_named_ns += ns;
	for (i = 0; i < v->n_top; i++) /* a name seen twice: two pids, or two epochs */
		if (!strncmp(v->top[i].comm, comm, 16)) {
			v->top[i].ns += ns;
			goto sort;
		}
	if (v->n_top < NAMES_LISTED) {
		i = v->n_top++;
	} else if (ns > v->top[NAMES_LISTED - 1].ns) {
		i = NAMES_LISTED - 1;
	} else {
		return;
	}
	memcpy(v->top[i].comm, comm, 16);
	v->top[i].comm[15] = 0;
	v->top[i].ns = ns;
sort:
	for (; i > 0 && v->top[i - 1].ns < v->top[i].ns; i--) {
		struct name_ns t = v->top[i - 1];

		v->top[i - 1] = v->top[i];
		v->top[i] = t;
	}
}

/* The names of the intervals before `epoch`: read, added to their CPU's view,
 * deleted. Keys are collected first: a hash map's next key after a deleted
 * one starts again from the first. (A name kept out of the top list by
 * another that grew past it later in the walk is lost from the list only;
 * others_ns holds all.) */
static void take_names(int fd, unsigned int epoch)
{
	static struct cb_witness_name keys[CB_WITNESS_NAMES];
	struct cb_witness_name key, next;
	unsigned int n = 0;
	void *prev = NULL;

	while (n < CB_WITNESS_NAMES && !bpf_map_get_next_key(fd, prev, &next)) {
		keys[n++] = next;
		key = next;
		prev = &key;
	}
	for (unsigned int i = 0; i < n; i++) {
		__u64 ns;

		if (keys[i].epoch >= epoch || bpf_map_lookup_elem(fd, &keys[i], &ns))
			continue;
		bpf_map_delete_elem(fd, &keys[i]);
		if (keys[i].cpu < MAX_CPUS && view_of_cpu[keys[i].cpu] >= 0)
			add_name(&views[view_of_cpu[keys[i].cpu]], keys[i].comm, ns);
	}
}

/* The pids of a snapshot line: 0, or -EINVAL for a bad one or more than
 * CB_WITNESS_PIDS. */
static int parse_pids(char *list, __u32 *pids, unsigned int *n)
{
	char *save = NULL, *tok;

	*n = 0;
	for (tok = strtok_r(list, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		uint64_t pid;

		if (cb_parse_u64(tok, &pid) || pid == 0 || pid > 0x7fffffff || *n == CB_WITNESS_PIDS)
			return -EINVAL;
		pids[(*n)++] = (__u32)pid;
	}
	return 0;
}

/* The trial's pids become `pids` in two steps around the interval's edge
 * (main): the new ones are added before it and the old ones removed after
 * it. A trial thread busy across the edge (a cpumap thread still draining its
 * ring when the load ends) is then the trial's at every charge inside its
 * window: added after the edge, or removed before it, the charges meanwhile
 * (a canary period's, each) went to others, by name, in the trial's window. */
static int add_trial_pids(int fd, const __u32 *pids, unsigned int n)
{
	__u8 one = 1;

	for (unsigned int i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &pids[i], &one, BPF_ANY))
			return -errno;
	return 0;
}

static void keep_only_trial_pids(int fd, const __u32 *pids, unsigned int n)
{
	static __u32 stale[CB_WITNESS_PIDS];
	__u32 key, next;
	unsigned int n_stale = 0;
	void *prev = NULL;

	/* Collected first: a hash map's next key after a deleted one starts again from the first. */
	while (n_stale < CB_WITNESS_PIDS && !bpf_map_get_next_key(fd, prev, &next)) {
		unsigned int i = 0;

		while (i < n && pids[i] != next)
			i++;
		if (i == n)
			stale[n_stale++] = next;
		key = next;
		prev = &key;
	}
	for (unsigned int i = 0; i < n_stale; i++)
		bpf_map_delete_elem(fd, &stale[i]);
}

/* The snapshot of the interval that epoch `e` (just raised) closed. */
static void print_snapshot(struct witness_bpf *skel, unsigned int e, unsigned long long seq,
			   unsigned long long since_ns, const char *pid_error)
{
	static struct cb_json j;
	int ncpu = libbpf_num_possible_cpus();
	struct cb_witness_cpu *now = calloc((size_t)ncpu, sizeof(*now));
	__u32 zero = 0;
	unsigned long long at = cb_now_ns();

	if (!now || bpf_map_lookup_elem(bpf_map__fd(skel->maps.per_cpu), &zero, now))
		cb_fatal("cannot read the witness's counters: %s", strerror(errno));
	cb_json_begin(&j, "snapshot");
	cb_json_u64(&j, "seq", seq);
	cb_json_u64(&j, "interval_ns", at - since_ns);
	if (pid_error)
		cb_json_str(&j, "error", pid_error);
	cb_json_arr_begin(&j, "cpus");
	for (int i = 0; i < n_views; i++) {
		struct cpu_view *v = &views[i];
		const struct cb_witness_cpu *c = &now[v->cpu];

		cb_json_elem_begin(&j);
		cb_json_u64(&j, "cpu", (uint64_t)v->cpu);
		cb_json_u64(&j, "trial_ns", c->trial_ns - v->last.trial_ns);
		cb_json_u64(&j, "others_ns", c->others_ns - v->last.others_ns);
		cb_json_u64(&j, "idle_ns", c->idle_ns - v->last.idle_ns);
		cb_json_u64(&j, "stopped_ns", c->stopped_ns - v->last.stopped_ns);
		cb_json_u64(&j, "canary_fires", c->canary_fires - v->last.canary_fires);
		/* The slot of interval e - 1 is whole unless this CPU charged nothing since e - 2. */
		if (c->longest_epoch + 1 >= e) {
			char comm[16];

			memcpy(comm, c->others_longest_comm[(e - 1) & 1], sizeof(comm));
			comm[15] = 0;
			cb_printable(comm);
			cb_json_u64(&j, "others_longest_ns", c->others_longest_ns[(e - 1) & 1]);
			cb_json_str(&j, "others_longest_name", c->others_longest_ns[(e - 1) & 1] ? comm : "");
		} else {
			cb_json_u64(&j, "others_longest_ns", 0);
			cb_json_str(&j, "others_longest_name", "");
		}
		cb_json_u64(&j, "stops", v->stops.count);
		cb_json_u64(&j, "stop_ns", v->stops.total_ns);
		cb_json_u64(&j, "longest_stop_ns", v->stops.longest_ns);
		cb_json_arr_begin(&j, "stops_ns");
		for (unsigned int k = 0; k < v->stops.n_listed; k++)
			cb_json_arr_u64(&j, v->stops.listed[k]);
		cb_json_arr_end(&j);
		cb_json_arr_begin(&j, "others_top");
		for (unsigned int k = 0; k < v->n_top; k++) {
			cb_printable(v->top[k].comm);
			cb_json_elem_begin(&j);
			cb_json_str(&j, "name", v->top[k].comm);
			cb_json_u64(&j, "ns", v->top[k].ns);
			cb_json_obj_end(&j);
		}
		cb_json_arr_end(&j);
		cb_json_obj_end(&j);
		v->last = *c;
		memset(&v->stops, 0, sizeof(v->stops));
		v->n_top = 0;
		v->others_named_ns = 0;
	}
	cb_json_arr_end(&j);
	if (cb_json_end(&j, stdout))
		exit(CB_EXIT_RUNTIME); /* the reader is gone */
	free(now);
}

/* The canary on `cpu`: a software cpu-clock event firing every period_ns. */
static int open_canary(int cpu, unsigned long long period_ns)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period_ns,
	};
	int fd = (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static void usage(FILE *out)
{
	char caps[160];

	fprintf(out,
"Usage: capbench-witness --cpus LIST [--cgroup DIR] [--period-us N]\n"
"       capbench-witness --help | --version\n"
"\n"
"Witness the host's interference on the CPUs of LIST: each CPU's run time by\n"
"whose it was (the cgroup DIR and the pids named on stdin: the trial's; idle;\n"
"others', by thread name) and its stops (a canary timer every N microseconds,\n"
"default 250, that fired late: the CPU was not running). Prints {\"type\":\"ready\"};\n"
"then for each line \"snapshot [PID...]\" on stdin one {\"type\":\"snapshot\"} line\n"
"with what each CPU saw since the previous one, and takes the PIDs as the\n"
"trial's from then on. Ends at the end of stdin, SIGINT or SIGTERM.\n");
	cb_caps_text(WITNESS_CAPS, caps, sizeof(caps), 0);
	fprintf(out, "Needs %s, as root or granted (docs/capabilities.md).\n", caps);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cpus", required_argument, NULL, 'c' },
		{ "cgroup", required_argument, NULL, 'g' },
		{ "period-us", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cpus_arg = NULL, *cgroup = NULL;
	static int cpus[MAX_WATCHED];
	static int canary_fd[MAX_WATCHED];
	uint64_t period_us = 250;
	struct witness_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *sw;
	char canary_why[256] = "", line[LINE_MAX];
	size_t line_len = 0;
	unsigned long long seq = 0, since;
	struct cb_json j;
	sigset_t stopsigs;
	struct pollfd pfd[3];
	int c, ncpu, sfd, cg_fd = -1;

	cb_set_progname(argv[0]);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:g:p:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': cpus_arg = optarg; break;
		case 'g': cgroup = optarg; break;
		case 'p':
			if (cb_parse_u64(optarg, &period_us) || period_us < PERIOD_US_MIN || period_us > PERIOD_US_MAX)
				cb_usage_error("bad --period-us '%s': give microseconds from %d to %d", optarg,
					       PERIOD_US_MIN, PERIOD_US_MAX);
			break;
		case 'h': usage(stdout); return CB_EXIT_OK;
		case 'V': cb_print_version();
		default: cb_opt_fail(c, argv);
		}
	}
	if (!cpus_arg)
		cb_usage_error("no CPUs given: use --cpus LIST (e.g. --cpus 0,1)");
	ncpu = cb_opt_cpu_list("--cpus", cpus_arg, cpus, MAX_WATCHED);
	for (int i = 0; i < ncpu; i++)
		if (cpus[i] >= MAX_CPUS)
			cb_usage_error("--cpus: CPU %d is beyond the %d this program watches", cpus[i], MAX_CPUS);
	if (cgroup) {
		cg_fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg_fd < 0)
			cb_usage_error("--cgroup %s: %s: give a cgroup v2 directory", cgroup, strerror(errno));
	}
	cb_require_caps(WITNESS_CAPS, "tracing the scheduler");
	for (int i = 0; i < MAX_CPUS; i++)
		view_of_cpu[i] = -1;
	for (int i = 0; i < ncpu; i++) {
		views[i].cpu = cpus[i];
		view_of_cpu[cpus[i]] = i;
	}
	n_views = ncpu;

	cb_libbpf_quiet();
	skel = witness_bpf__open();
	if (!skel)
		cb_fatal("cannot open the witness's BPF program: %s", strerror(errno));
	skel->rodata->period_ns = period_us * 1000;
	skel->rodata->stop_min_ns = period_us * 1000;
	if (witness_bpf__load(skel))
		cb_fatal("cannot load the witness's BPF program (it needs BTF and tp_btf, Linux 5.5): %s",
			 strerror(errno));
	if (cg_fd >= 0) {
		__u32 key = 0, value = (__u32)cg_fd;

		if (bpf_map_update_elem(bpf_map__fd(skel->maps.run_group), &key, &value, BPF_ANY))
			cb_fatal("cannot take the cgroup %s: %s", cgroup, strerror(errno));
	}
	sw = bpf_program__attach(skel->progs.cb_switch);
	if (!sw)
		cb_fatal("cannot attach to the sched_switch tracepoint: %s", strerror(errno));
	for (int i = 0; i < ncpu; i++) {
		int fd = open_canary(cpus[i], period_us * 1000);

		canary_fd[i] = fd;
		if (fd < 0) {
			snprintf(canary_why, sizeof(canary_why), "no cpu-clock perf event on CPU %d: %s", cpus[i],
				 strerror(-fd));
			break;
		}
		if (!bpf_program__attach_perf_event(skel->progs.cb_canary, fd)) {
			snprintf(canary_why, sizeof(canary_why), "cannot attach the canary on CPU %d: %s", cpus[i],
				 strerror(errno));
			break;
		}
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.stops), on_stop, NULL, NULL);
	if (!rb)
		cb_fatal("cannot read the witness's ring buffer: %s", strerror(errno));

	sigemptyset(&stopsigs);
	sigaddset(&stopsigs, SIGINT);
	sigaddset(&stopsigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &stopsigs, NULL);
	sfd = signalfd(-1, &stopsigs, SFD_CLOEXEC);
	if (sfd < 0)
		cb_fatal("signalfd: %s", strerror(errno));

	since = cb_now_ns();
	cb_json_begin(&j, "ready");
	cb_json_arr_begin(&j, "cpus");
	for (int i = 0; i < ncpu; i++)
		cb_json_arr_u64(&j, (uint64_t)cpus[i]);
	cb_json_arr_end(&j);
	cb_json_u64(&j, "period_ns", period_us * 1000);
	cb_json_bool(&j, "run_group", cg_fd >= 0);
	cb_json_str(&j, "canary", canary_why);
	cb_json_end(&j, stdout);

	pfd[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = ring_buffer__epoll_fd(rb), .events = POLLIN };
	for (;;) {
		ssize_t got;
		char *nl;

		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			cb_fatal("poll: %s", strerror(errno));
		}
		if (pfd[1].revents)
			break;
		if (pfd[2].revents)
			ring_buffer__consume(rb);
		if (!pfd[0].revents)
			continue;
		got = read(STDIN_FILENO, line + line_len, sizeof(line) - 1 - line_len);
		if (got <= 0)
			break; /* capbench is gone */
		line_len += (size_t)got;
		line[line_len] = 0;
		while ((nl = strchr(line, '\n'))) {
			const char *err = NULL;

			*nl = 0;
			if (!strncmp(line, "snapshot", 8) && (line[8] == 0 || line[8] == ' ')) {
				int pids_fd = bpf_map__fd(skel->maps.trial_pids);
				unsigned long long at;
				__u32 pids[CB_WITNESS_PIDS];
				unsigned int n;

				if (parse_pids(line + 8, pids, &n)) {
					err = "bad pid list: give up to 64 pids after snapshot";
					n = 0;
				} else if (add_trial_pids(pids_fd, pids, n)) {
					err = "the pid list does not fit the witness's map";
				}
				/* The edge: the interval closes here (add before, remove after). */
				at = cb_now_ns();
				ring_buffer__consume(rb);
				skel->bss->epoch++;
				take_names(bpf_map__fd(skel->maps.others_by_name), skel->bss->epoch);
				print_snapshot(skel, skel->bss->epoch, ++seq, since, err);
				keep_only_trial_pids(pids_fd, pids, n);
				since = at;
			} else if (line[0]) {
				fprintf(stderr, "capbench-witness: unknown command (give snapshot [PID...])\n");
			}
			line_len -= (size_t)(nl + 1 - line);
			memmove(line, nl + 1, line_len + 1);
		}
		if (line_len >= sizeof(line) - 1)
			cb_fatal("a command line longer than %d bytes", LINE_MAX);
	}
	ring_buffer__free(rb);
	bpf_link__destroy(sw);
	for (int i = 0; i < ncpu; i++)
		if (canary_fd[i] > 0)
			close(canary_fd[i]);
	witness_bpf__destroy(skel);
	return CB_EXIT_OK;
}
