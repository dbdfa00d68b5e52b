/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer harnesses share (docs/programs.md, "Fuzzing"):
 *
 * - fuzz_file(): the input as a regular file the readers open by path. A
 *   memfd is a regular file (fstat says S_IFREG), so it passes
 *   cb_open_regular like a file on disk, and /proc/self/fd/N names it.
 * - fuzz_argv(): the input as a command line, its arguments separated by
 *   NUL bytes.
 * - fuzz_catch_exit(): the option parsers end the program with exit(2) on
 *   bad input (cb_usage_error). The harnesses are linked with
 *   -Wl,--wrap=exit, so within FUZZ_TRY that exit returns to the harness
 *   instead, and the next input runs in the same process. Outside it, exit
 *   is exit (libFuzzer's own calls go through the wrapper too).
 */
#ifndef CAPBENCH_FUZZ_COMMON_H
#define CAPBENCH_FUZZ_COMMON_H

#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util.h"

static jmp_buf fuzz_exit_env;
static volatile int fuzz_exit_armed;
static volatile int fuzz_exit_status;

void __real_exit(int status) __attribute__((noreturn));
void __wrap_exit(int status) __attribute__((noreturn));

void __wrap_exit(int status)
{
	if (fuzz_exit_armed) {
		fuzz_exit_armed = 0;
		fuzz_exit_status = status;
		longjmp(fuzz_exit_env, 1);
	}
	__real_exit(status);
}

/* FUZZ_TRY { code that may call exit() } FUZZ_END: true when it returned. */
#define FUZZ_TRY                                                                   \
	if (setjmp(fuzz_exit_env) == 0) {                                          \
		fuzz_exit_armed = 1;
#define FUZZ_END                                                                   \
		fuzz_exit_armed = 0;                                               \
	}                                                                          \
	fuzz_exit_armed = 0;

/* Write the input to the harness's memfd; returns its path. */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];

	if (fd < 0) {
		fd = memfd_create("capbench-fuzz", MFD_CLOEXEC);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size)) {
		perror("memfd");
		abort();
	}
	return path;
}

#define FUZZ_MAX_ARGS 64

/* Prepare one parse of a command line: argv[0] = prog, then `fixed`
 * (NULL-terminated), then the input's NUL-separated strings; returns argc.
 * The strings live in `buf`, which the caller frees. getopt starts afresh;
 * what the parse prints on stdout (--help, a check line) goes to /dev/null. */
static inline int fuzz_argv(const char *prog, const char *const *fixed, const uint8_t *data,
			    size_t size, char **argv, char **buf)
{
	static int ready;
	int argc = 0;
	size_t start = 0;

	if (!ready) {
		if (!freopen("/dev/null", "w", stdout))
			abort();
		cb_set_progname(prog);
		ready = 1;
	}
	optind = 0; /* glibc: reinitialise getopt */
	fuzz_exit_status = 0;
	argv[argc++] = (char *)prog;
	for (; fixed && *fixed && argc < FUZZ_MAX_ARGS; fixed++)
		argv[argc++] = (char *)*fixed;
	*buf = malloc(size + 1);
	if (!*buf)
		abort();
	memcpy(*buf, data, size);
	(*buf)[size] = 0;
	for (size_t i = 0; i <= size && argc < FUZZ_MAX_ARGS; i++) {
		if (i == size || !(*buf)[i]) {
			if (i > start || i < size)
				argv[argc++] = *buf + start;
			start = i + 1;
		}
	}
	argv[argc] = NULL;
	return argc;
}

#endif
