/* SPDX-License-Identifier: MIT */
/*
 * For the tests of capbench-cap's options: run cap_configure() on an argv in
 * a child process (it ends the program on bad input, --help and --describe)
 * and hand back its exit status, stdout and stderr; and a small JSON checker
 * for --describe.
 */
#ifndef CAPBENCH_TEST_CAP_RUN_H
#define CAPBENCH_TEST_CAP_RUN_H

#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cap.h"
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

/* --- a JSON checker: is the text one valid JSON value? ------------------- */

static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
			} else if (!strchr("\"\\/bfnrt", *p)) {
				return NULL;
			}
		}
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_number(const char *p)
{
	const char *s = p;

	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p))
		p++;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return NULL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	return p > s ? p : NULL;
}

static const char *json_container(const char *p, char close, int object)
{
	p = json_ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (object) {
			p = json_string(json_ws(p));
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p++ != ':')
				return NULL;
		}
		p = json_value(p);
		if (!p)
			return NULL;
		p = json_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '{')
		return json_container(p, '}', 1);
	if (*p == '[')
		return json_container(p, ']', 0);
	if (*p == '"')
		return json_string(p);
	if (!strncmp(p, "true", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (!strncmp(p, "null", 4))
		return p + 4;
	return json_number(p);
}

/* One JSON document and nothing after it but white space. */
static int json_valid(const char *text)
{
	const char *end = json_value(text);

	return end && !*json_ws(end);
}

#endif
