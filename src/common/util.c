/* SPDX-License-Identifier: MIT */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <linux/capability.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *progname = "capbench";

void cb_set_progname(const char *name)
{
	const char *slash = strrchr(name, '/');
	progname = slash ? slash + 1 : name;
}

void cb_print_version(void)
{
	printf("%s %s\n", progname, CAPBENCH_VERSION);
	exit(CB_EXIT_OK);
}

void cb_printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static void vreport(const char *fmt, va_list ap)
{
	char *line = NULL;

	fflush(stdout);
	fprintf(stderr, "%s: ", progname);
	if (vasprintf(&line, fmt, ap) >= 0) {
		cb_printable(line);
		fputs(line, stderr);
		free(line);
	}
	fputc('\n', stderr);
}

void cb_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	exit(CB_EXIT_USAGE);
}

void cb_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	exit(CB_EXIT_RUNTIME);
}

static int user_fault;

int cb_user_fault(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	user_fault = 1;
	return err;
}

int cb_fault_status(void)
{
	return user_fault ? CB_EXIT_USAGE : CB_EXIT_RUNTIME;
}

static const struct {
	uint64_t bit;
	const char *name;
} cap_names[] = {
	{ CB_CAP_NET_ADMIN, "net_admin" },
	{ CB_CAP_NET_RAW, "net_raw" },
	{ CB_CAP_SYS_ADMIN, "sys_admin" },
	{ CB_CAP_PERFMON, "perfmon" },
	{ CB_CAP_BPF, "bpf" },
};

void cb_caps_text(uint64_t caps, char *buf, size_t n, int setpriv)
{
	size_t i, len;

	if (n)
		*buf = 0;
	for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++) {
		if (!(caps & cap_names[i].bit))
			continue;
		len = strlen(buf);
		if (setpriv)
			snprintf(buf + len, n - len, "%s+%s", len ? "," : "", cap_names[i].name);
		else
			snprintf(buf + len, n - len, "%sCAP_%s", len ? ", " : "", cap_names[i].name);
	}
	if (!setpriv)
		for (i = 0; buf[i]; i++)
			buf[i] = (char)toupper((unsigned char)buf[i]);
}

void cb_require_caps(uint64_t caps, const char *what)
{
	/* The kernel checks capabilities, not the user id: root has them all,
	 * another user may be granted them (setpriv --ambient-caps, setcap). */
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = { 0 };
	char names[160], grant[80];
	uint64_t eff, missing;

	if (syscall(SYS_capget, &hdr, data))
		cb_fatal("capget: %s", strerror(errno));
	eff = (uint64_t)data[0].effective | (uint64_t)data[1].effective << 32;
	missing = caps & ~eff;
	if (!missing)
		return;
	cb_caps_text(missing, names, sizeof(names), 0);
	cb_caps_text(missing, grant, sizeof(grant), 1);
	cb_usage_error("%s needs %s: run as root, or grant %s with "
		       "`setpriv --inh-caps %s --ambient-caps %s` (docs/capabilities.md)",
		       what, names, missing & (missing - 1) ? "them" : "it", grant, grant);
}

int cb_pin_cpu(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int cb_cpu_count(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return (int)sysconf(_SC_NPROCESSORS_ONLN);
	return CPU_COUNT(&set);
}

int cb_ifindex(const char *ifname)
{
	unsigned int idx = if_nametoindex(ifname);

	return idx ? (int)idx : -errno;
}

static int if_ioctl(const char *ifname, unsigned long req, struct ifreq *ifr)
{
	int fd, ret = 0;

	if (strlen(ifname) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(ifr, 0, sizeof(*ifr));
	strcpy(ifr->ifr_name, ifname);
	if (ioctl(fd, req, ifr) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int cb_if_mtu(const char *ifname)
{
	struct ifreq ifr;
	int ret = if_ioctl(ifname, SIOCGIFMTU, &ifr);

	return ret ? ret : ifr.ifr_mtu;
}

int cb_if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr;
	int ret = if_ioctl(ifname, SIOCGIFHWADDR, &ifr);

	if (!ret)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	return ret;
}

int cb_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

int cb_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int cb_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno == ERANGE || !isfinite(v))
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int cb_parse_duration(const char *s, double *seconds)
{
	char *end;
	double v, mult = 1.0;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		mult = 1.0;
	else if (!strcmp(end, "ms"))
		mult = 1e-3;
	else if (!strcmp(end, "us"))
		mult = 1e-6;
	else if (!strcmp(end, "m") || !strcmp(end, "min"))
		mult = 60.0;
	else
		return -EINVAL;
	if (v <= 0)
		return -ERANGE;
	*seconds = v * mult;
	return 0;
}

int cb_parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || errno)
		return -EINVAL;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (~0ull >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

/* One number of a CPU list: digits only, ends at ',' '-' or the end. */
static int cpu_number(const char **p, int ncpu, int *cpu)
{
	const char *s = *p;
	long v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (v >= ncpu)
			return -ERANGE;
	}
	*p = s;
	*cpu = (int)v;
	return 0;
}

int cb_parse_cpu_list(const char *s, int ncpu, int *out, int max)
{
	int n = 0, lo, hi, err;

	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		if ((err = cpu_number(&s, ncpu, &lo)))
			return err;
		hi = lo;
		if (*s == '-') {
			s++;
			if ((err = cpu_number(&s, ncpu, &hi)))
				return err;
			if (hi < lo)
				return -EINVAL;
		}
		for (int cpu = lo; cpu <= hi; cpu++) {
			for (int i = 0; i < n; i++)
				if (out[i] == cpu)
					return -EINVAL;
			if (n == max)
				return -ERANGE;
			out[n++] = cpu;
		}
		if (!*s)
			return n;
		if (*s++ != ',')
			return -EINVAL;
	}
}

const char *cb_file_kind(unsigned int st_mode)
{
	switch (st_mode & S_IFMT) {
	case S_IFREG: return "a file";
	case S_IFDIR: return "a directory";
	case S_IFIFO: return "a FIFO";
	case S_IFCHR: return "a character device";
	case S_IFBLK: return "a block device";
	case S_IFSOCK: return "a socket";
	default: return "not a regular file";
	}
}

/* Whose permission counts. A program may hold more privilege than the user
 * who runs it: capabilities granted as ambient ones (docs/capabilities.md:
 * dac_override; the tests add dac_read_search), or file capabilities, or a
 * setuid install. open() judges the effective credentials, so it would open
 * /etc/shadow for that user. faccessat() without AT_EACCESS judges the real
 * uid and gids, and for a real uid other than 0 without the effective
 * capabilities (fs/open.c, access_override_creds), as setuid-aware programs
 * ask. It is asked twice: of the path before opening it (the user's own
 * answer: no such file, a folder closed to them, no permission), and of the
 * opened descriptor through /proc/self/fd/N, whose lookup follows the magic
 * link to the very inode opened (one's own fd folder is always open to
 * oneself, fs/proc/fd.c): a name swapped to a link to /etc/shadow between
 * the two is judged by what was opened. capbench's Python asks the same
 * (python/capbench/inputs.py, which also says what this cannot see). */
static void not_the_users(const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "cannot open %s: permission denied to uid %u, who runs this "
		 "program (it reads only what its user may read): give a file of yours", what,
		 (unsigned int)getuid());
}

static int real_user_may_read(int fd, const char *what, char *err, size_t errlen)
{
	char self[64];
	int e;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (!faccessat(AT_FDCWD, self, R_OK, 0))
		return 0;
	e = -errno;
	if (e == -EACCES)
		not_the_users(what, err, errlen);
	else
		snprintf(err, errlen, "cannot open %s: cannot tell whether uid %u, who runs this "
			 "program, may read it: %s: %s (is /proc mounted?)", what,
			 (unsigned int)getuid(), self, strerror(-e));
	return e;
}

int cb_open_regular(const char *path, const char *what, uint64_t max_bytes, char *err,
		    size_t errlen)
{
	struct stat st;
	int fd, e;

	if (!*path) {
		snprintf(err, errlen, "%s: the file name is empty: give a file", what);
		return -ENOENT;
	}
	if (faccessat(AT_FDCWD, path, R_OK, 0)) {
		e = -errno;
		if (e == -EACCES)
			not_the_users(what, err, errlen);
		else
			snprintf(err, errlen, "cannot open %s: %s", what, strerror(-e));
		return e;
	}
	/* O_NONBLOCK: opening a FIFO for reading returns at once instead of
	 * waiting for a writer (fifo(7)); O_NOCTTY: a terminal never becomes
	 * our controlling terminal. Nothing is read before fstat() says this
	 * is a regular file. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot open %s: %s", what, strerror(-e));
		return e;
	}
	if (fstat(fd, &st)) {
		e = -errno;
		snprintf(err, errlen, "cannot open %s: %s", what, strerror(-e));
		close(fd);
		return e;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is %s, not a regular file: give a file", what,
			 cb_file_kind(st.st_mode));
		close(fd);
		return -EINVAL;
	}
	e = real_user_may_read(fd, what, err, errlen);
	if (e) {
		close(fd);
		return e;
	}
	if ((uint64_t)st.st_size > max_bytes) {
		snprintf(err, errlen, "%s holds %llu bytes, more than the %llu MiB capbench reads: "
			 "give a smaller file", what, (unsigned long long)st.st_size,
			 (unsigned long long)(max_bytes >> 20));
		close(fd);
		return -EFBIG;
	}
	/* O_NONBLOCK stays: it changes nothing for a file on a disk (reads
	 * never wait there), but some kernel pseudo-files are "regular" with a
	 * size of 0 and wait for data (/proc/kmsg): with it they fail at once
	 * (EAGAIN) instead of hanging. Their size tells nothing either, so
	 * the readers also stop at max_bytes as they read. */
	return fd;
}

int cb_read_regular(const char *path, const char *what, uint64_t max_bytes, char **text,
		    size_t *size, char *err, size_t errlen)
{
	size_t len = 0, cap = 4096;
	char *buf = NULL;
	int fd = cb_open_regular(path, what, max_bytes, err, errlen), e = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap || !buf) {
			char *nb;

			cap = buf ? cap * 2 : cap;
			nb = realloc(buf, cap);
			if (!nb) {
				snprintf(err, errlen, "cannot read %s: out of memory", what);
				e = -ENOMEM;
				break;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = -errno;
			snprintf(err, errlen, "cannot read %s: %s", what, strerror(-e));
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max_bytes) {
			snprintf(err, errlen, "%s holds more than the %llu MiB capbench reads: give a "
				 "smaller file", what, (unsigned long long)(max_bytes >> 20));
			e = -EFBIG;
			break;
		}
	}
	close(fd);
	if (e) {
		free(buf);
		return e;
	}
	buf[len] = 0;
	*text = buf;
	*size = len;
	return 0;
}

uint64_t cb_opt_count(const char *flag, const char *s, const char *what)
{
	uint64_t v;

	if (cb_parse_u64(s, &v) || v == 0 || v > CB_COUNT_MAX)
		cb_usage_error("bad %s '%s': give a number of %s from 1 to 10^15", flag, s, what);
	return v;
}

double cb_opt_seconds(const char *flag, const char *s, double min_s, double max_s)
{
	double v;

	if (cb_parse_duration(s, &v))
		cb_usage_error("bad %s '%s': give seconds above 0, e.g. 5, 5s or 250ms", flag, s);
	if (v < min_s || v > max_s) {
		if (min_s > 0)
			cb_usage_error("bad %s '%s': give %g to %g seconds", flag, s, min_s, max_s);
		cb_usage_error("bad %s '%s': give at most %g seconds", flag, s, max_s);
	}
	return v;
}

double cb_opt_interval(const char *flag, const char *s)
{
	return cb_opt_seconds(flag, s, CB_INTERVAL_MIN_S, CB_INTERVAL_MAX_S);
}

int cb_opt_cpu(const char *flag, const char *s)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t v;

	if (cb_parse_u64(s, &v) || v >= (uint64_t)ncpu)
		cb_usage_error("bad %s '%s': this machine has CPUs 0..%ld", flag, s, ncpu - 1);
	return (int)v;
}

int cb_opt_cpu_list(const char *flag, const char *s, int *cpus, int max)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int n = cb_parse_cpu_list(s, (int)ncpu, cpus, max);

	if (n == -ERANGE)
		cb_usage_error("bad %s '%s': this machine has CPUs 0..%ld (at most %d of them)", flag, s,
			       ncpu - 1, max);
	if (n <= 0)
		cb_usage_error("bad %s '%s': give distinct CPUs as 0,1 or 0-3", flag, s);
	return n;
}

void cb_opt_fail(int c, char **argv)
{
	if (c == ':')
		cb_usage_error("option %s needs a value (see --help)", argv[optind - 1]);
	cb_usage_error("unknown option %s (see --help)", argv[optind - 1]);
}

uint64_t cb_tick_first(uint64_t wall_ns, uint64_t every_ns)
{
	uint64_t next = (wall_ns / every_ns + 1) * every_ns;

	return next - wall_ns < every_ns / 2 ? next + every_ns : next;
}

void cb_tick_init(struct cb_tick *t, double every_s, uint64_t mono_ns, uint64_t wall_ns)
{
	/* --interval is at least CB_INTERVAL_MIN_S: every_ns is never 0. */
	t->every_ns = (uint64_t)llround(every_s * 1e9);
	t->wall_ns = cb_tick_first(wall_ns, t->every_ns);
	t->mono_ns = mono_ns + (t->wall_ns - wall_ns);
}

void cb_tick_start(struct cb_tick *t, double every_s)
{
	struct timespec ts;
	uint64_t mono;

	clock_gettime(CLOCK_REALTIME, &ts);
	mono = cb_now_ns(); /* tens of nanoseconds after: far below the ms "at" tells */
	cb_tick_init(t, every_s, mono, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
}

uint64_t cb_tick_take(struct cb_tick *t, uint64_t now_ns)
{
	uint64_t missed = now_ns > t->mono_ns ? (now_ns - t->mono_ns) / t->every_ns : 0;
	uint64_t at = t->wall_ns + missed * t->every_ns;

	t->wall_ns = at + t->every_ns;
	t->mono_ns += (missed + 1) * t->every_ns;
	return at;
}
