/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the capbench C programs: errors, clocks, CPUs,
 * interfaces and number parsing. */
#ifndef CAPBENCH_UTIL_H
#define CAPBENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Exit codes shared by every program (see docs/programs.md). */
#define CB_EXIT_OK       0
#define CB_EXIT_RUNTIME  1
#define CB_EXIT_USAGE    2

/* Print "PROG: message" on one line to stderr and exit with CB_EXIT_USAGE.
 * Meant for bad input: the message should name the problem and the fix. */
void cb_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The same for failures at run time (exit status CB_EXIT_RUNTIME). */
void cb_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/*
 * A failure found while setting up (a capture backend's open(), a generator
 * engine's): the function that finds it prints one line and returns -errno
 * (libbpf style), and says there whether the user can fix it (bad input, a
 * missing interface or privilege) by printing the line with cb_user_fault(),
 * which marks it; any other line (fprintf) is a failure (the kernel refused,
 * out of memory). main() takes the exit status from cb_fault_status(), never
 * from the errno: the same errno means either, depending on the call.
 * cb_user_fault() prints "PROG: message" and returns err.
 */
int cb_user_fault(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* CB_EXIT_USAGE once cb_user_fault() was called, else CB_EXIT_RUNTIME. */
int cb_fault_status(void);
/* Capabilities (linux/capability.h numbers) as bits of a mask. */
#define CB_CAP_NET_ADMIN (1ull << 12)
#define CB_CAP_NET_RAW   (1ull << 13)
#define CB_CAP_SYS_ADMIN (1ull << 21)
#define CB_CAP_PERFMON   (1ull << 38)
#define CB_CAP_BPF       (1ull << 39)
/* End the program with a usage error unless the effective capability set
 * holds every capability of `caps` (CB_CAP_* bits), whatever the user id;
 * the line names the missing ones, says what needs them (`what`, e.g.
 * "packet capture") and how to grant them. */
void cb_require_caps(uint64_t caps, const char *what);
/* The capabilities of `caps` as text for --help and errors: "CAP_NET_ADMIN,
 * CAP_BPF", or with `setpriv` "+net_admin,+bpf" (setpriv's form). */
void cb_caps_text(uint64_t caps, char *buf, size_t n, int setpriv);
/* -V/--version: print "PROGRAM VERSION" (capbench's release, meson's project
 * version) on stdout and exit 0. */
void cb_print_version(void) __attribute__((noreturn));
/* Set the program name used as prefix of error lines. */
void cb_set_progname(const char *name);
/* Replace every terminal control byte of `s` (below 0x20, and DEL) with '?',
 * in place: an error line echoes arguments and file contents, and a CR, ESC
 * or form feed among them would break the line or drive the terminal. */
void cb_printable(char *s);

/* CPU time of the calling thread: work that a preempted thread does not do. */
static inline uint64_t cb_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t cb_now_ns(void)
{
	struct timespec ts;
	/* CLOCK_MONOTONIC is the clock bpf_ktime_get_ns() reads, so user-space
	 * and BPF timestamps compare directly. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* --- Interval ticks on the wall clock --------------------------------------
 * The programs that print interval lines (capbench-gen, capbench-cap) tick
 * at whole multiples of --interval since the epoch of CLOCK_REALTIME, not at
 * multiples from their own start: two programs started half a second apart,
 * or on two hosts whose clocks NTP keeps together (capbench runs sensors
 * over SSH), then print lines of the same instants, and a reader pairs them
 * by the tick's time each line carries ("at"). The wall clock is read once,
 * at the start, and the ticks are slept for on CLOCK_MONOTONIC: a step of
 * the wall clock later (settimeofday, an NTP step) moves no tick and never
 * makes one run twice or backwards, while NTP's slewing, which both clocks
 * follow, keeps the two within parts per million of each other. */
struct cb_tick {
	uint64_t every_ns;
	uint64_t wall_ns; /* the next tick, CLOCK_REALTIME */
	uint64_t mono_ns; /* the same instant on CLOCK_MONOTONIC (cb_now_ns): when to wake */
};

/* The first tick after wall time wall_ns: the next whole multiple of
 * every_ns, or the one after it when that is closer than half an interval
 * (a first interval line over a few milliseconds says nothing). */
uint64_t cb_tick_first(uint64_t wall_ns, uint64_t every_ns);
/* Ticks every every_s seconds from the two clocks read at the same moment
 * (mono_ns: cb_now_ns(); wall_ns: CLOCK_REALTIME); cb_tick_start reads them. */
void cb_tick_init(struct cb_tick *t, double every_s, uint64_t mono_ns, uint64_t wall_ns);
void cb_tick_start(struct cb_tick *t, double every_s);
/* Once cb_now_ns() has reached t->mono_ns: the wall time of the latest tick
 * at or before now_ns, and t moved on to the tick after it. A caller that
 * woke late by more than an interval skips the ticks it missed rather than
 * printing them back to back. */
uint64_t cb_tick_take(struct cb_tick *t, uint64_t now_ns);

/* Pin the calling thread to one CPU; returns 0 or -errno. */
int cb_pin_cpu(int cpu);
/* Number of CPUs this process may run on. */
int cb_cpu_count(void);

/* Interface helpers: return 0 / positive value or -errno. */
int cb_ifindex(const char *ifname);
int cb_if_mtu(const char *ifname);
int cb_if_mac(const char *ifname, uint8_t mac[6]);
/* Parse "aa:bb:cc:dd:ee:ff"; returns 0 or -EINVAL. */
int cb_parse_mac(const char *s, uint8_t mac[6]);

/* Strict number parsing: the whole string must be a number in range.
 * Return 0 or -EINVAL / -ERANGE. */
int cb_parse_u64(const char *s, uint64_t *out);
int cb_parse_double(const char *s, double *out);
/* Durations: "5", "5s", "250ms", "2m"; result in seconds (> 0). */
int cb_parse_duration(const char *s, double *seconds);
/* Sizes: "4096", "64k", "4M", "1G" (binary multiples). */
int cb_parse_bytes(const char *s, uint64_t *out);

/* A CPU list, "1", "0,2", "0-3,6": each CPU below ncpu, none twice, at most
 * `max` of them, in the order given. Returns how many were written to
 * out[], or -EINVAL (not a list, a CPU twice, a range backwards) /
 * -ERANGE (a CPU >= ncpu, more than max). */
int cb_parse_cpu_list(const char *s, int ncpu, int *out, int max);

/* --- Input files ---------------------------------------------------------
 * Everything a program reads from a path given on the command line (dist:,
 * trace:, --replay) is a regular file of bounded size: a device such as
 * /dev/zero never ends, a FIFO blocks until a writer comes, a directory
 * reads as an error deep inside a parser. */

/* What a file of this st_mode is, for an error line: "a directory",
 * "a FIFO", "a character device", "a block device", "a socket", "a file". */
const char *cb_file_kind(unsigned int st_mode);

/* Open `path` for reading if it is a regular file of at most max_bytes
 * that the user who runs the program may read: its real uid and gids, not
 * the privileges the program holds (util.c says how, and why twice).
 * Returns the descriptor (O_NONBLOCK, close-on-exec: a file on a disk never
 * waits, a kernel pseudo-file that would wait fails with EAGAIN; the caller
 * still stops reading at max_bytes, as such a file's size says nothing), or
 * -errno with one line
 * in err that starts with `what` (e.g. "--replay /tmp/x.pcap") and names
 * what the path is: -ENOENT and the like (cannot open), -EACCES (not the
 * user's to read), -EINVAL (not a regular file), -EFBIG (larger than
 * max_bytes). */
int cb_open_regular(const char *path, const char *what, uint64_t max_bytes, char *err,
		    size_t errlen);

/* A whole regular file (cb_open_regular) into memory: *text (NUL-terminated,
 * freed by the caller) and *size. Stops at max_bytes whatever the file's
 * size said (a pseudo-file says 0). Returns 0 or -errno with one line in err. */
int cb_read_regular(const char *path, const char *what, uint64_t max_bytes, char **text,
		    size_t *size, char *err, size_t errlen);

/* --- Bounds of times and counts -------------------------------------------
 * Checked at parse time, so no later arithmetic can overflow.
 *
 * CB_SECONDS_MAX, a day: the longest --duration (and --count at a paced
 * rate) a program accepts. The generator's departure times are 64-bit
 * counts of 1/65536 ns (pacing.h), which wrap after 2^48 ns = 78.2 hours;
 * a day stays well below that with any gap added, and is far longer than
 * any trial worth running (the seeds' longest is minutes). In nanoseconds
 * it is 8.64e13, so duration_s * 1e9 is exact in a double and a uint64_t.
 * CB_COUNT_MAX, 10^15 frames: a day at 100GbE's wire rate of 64 B frames
 * (148.8 Mpps) is 1.3e13 frames; 10^15 leaves room for unpaced runs and
 * keeps every sum of counts far below 2^64.
 * CB_INTERVAL_MIN_S, 10 ms: one interval line per 10 ms is 100 lines a
 * second, enough to see a stall; less only floods the reader (--interval
 * 1us printed 249,559 lines in a second). CB_INTERVAL_MAX_S: an hour. */
#define CB_SECONDS_MAX    86400.0
#define CB_COUNT_MAX      1000000000000000ull
#define CB_INTERVAL_MIN_S 0.01
#define CB_INTERVAL_MAX_S 3600.0

/* Option values shared by the programs: each returns the checked value or
 * ends the program with a usage error naming `flag` and the fix. */
uint64_t cb_opt_count(const char *flag, const char *s, const char *what); /* 1..CB_COUNT_MAX */
/* Seconds within min_s..max_s (min_s 0: above 0). */
double cb_opt_seconds(const char *flag, const char *s, double min_s, double max_s);
/* --interval: CB_INTERVAL_MIN_S..CB_INTERVAL_MAX_S. */
double cb_opt_interval(const char *flag, const char *s);
int cb_opt_cpu(const char *flag, const char *s);                          /* a CPU here */
/* "0,2,5" or "0-3" or a mix: up to max CPUs into cpus[], each one this
 * machine has. Returns how many, or ends the program with a usage error
 * naming `flag`. */
int cb_opt_cpu_list(const char *flag, const char *s, int *cpus, int max);
/* The usage error for getopt_long's ':' (missing value) and '?' returns. */
void cb_opt_fail(int c, char **argv) __attribute__((noreturn));

#endif
