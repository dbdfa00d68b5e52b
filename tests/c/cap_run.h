/* SPDX-License-Identifier: MIT */
/*
 * For the tests of capbench-cap's options: run cap_configure() on an argv in
 * a child process (it ends the program on bad input, --help and --describe)
 * and hand back its exit status, stdout and stderr.
 */
#ifndef CAPBENCH_TEST_CAP_RUN_H
#define CAPBENCH_TEST_CAP_RUN_H

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cap.h"
#include "json_check.h"
#include "util.h"

struct run_result {
	int status;         /* exit status; 0 also when cap_configure returned */
	char out[65536];
	char err[4096];
};

/* Read fd to EOF into buf (NUL-terminated, cut to len). */
static void slurp(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;
	char sink[4096];

	while ((r = read(fd, n + 1 < len ? buf + n : sink,
			 n + 1 < len ? len - 1 - n : sizeof(sink))) > 0)
		if (n + 1 < len)
			n += (size_t)r;
	buf[n] = 0;
	close(fd);
}

/* argv: NULL-terminated, without the program name. */
static void run_cap(const char *const *args, struct run_result *r)
{
	char *argv[64];
	int argc = 0, po[2], pe[2], st;
	pid_t pid;

	argv[argc++] = "capbench-cap";
	while (*args && argc < 63)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	if (pipe(po) || pipe(pe))
		abort();
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		struct cap_cfg cfg;
		int check;

		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		cb_set_progname("capbench-cap");
		optind = 0;
		cap_configure(argc, argv, &cfg, &check);
		fflush(NULL);
		_exit(0);
	}
	close(po[1]);
	close(pe[1]);
	slurp(po[0], r->out, sizeof(r->out)); /* the child writes stdout first */
	slurp(pe[0], r->err, sizeof(r->err));
	waitpid(pid, &st, 0);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
