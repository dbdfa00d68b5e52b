/* SPDX-License-Identifier: MIT */
/* Small helpers shared by the capbench C programs: errors, clocks, CPUs,
 * interfaces and number parsing. */
#ifndef CAPBENCH_UTIL_H
#define CAPBENCH_UTIL_H

#include <stdbool.h>
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
/* End the program with a usage error unless it runs as root; `needs` says
 * what needs root, e.g. "packet capture needs CAP_NET_RAW". */
void cb_require_root(const char *needs);
/* Set the program name used as prefix of error lines. */
void cb_set_progname(const char *name);

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

/* Option values shared by the programs: each returns the checked value or
 * ends the program with a usage error naming `flag` and the fix. */
uint64_t cb_opt_count(const char *flag, const char *s, const char *what); /* > 0 */
double cb_opt_seconds(const char *flag, const char *s);                   /* > 0 */
int cb_opt_cpu(const char *flag, const char *s);                          /* a CPU here */
/* "0,2,5" or "0-3" or a mix: up to max CPUs into cpus[], each one this
 * machine has. Returns how many, or ends the program with a usage error
 * naming `flag`. */
int cb_opt_cpu_list(const char *flag, const char *s, int *cpus, int max);
/* The usage error for getopt_long's ':' (missing value) and '?' returns. */
void cb_opt_fail(int c, char **argv) __attribute__((noreturn));

#endif
