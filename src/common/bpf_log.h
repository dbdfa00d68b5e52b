/* SPDX-License-Identifier: MIT */
/* libbpf's log, quiet unless CAPBENCH_DEBUG is set: the programs print their
 * own one-line errors, libbpf's multi-line verifier dumps are for debugging. */
#ifndef CAPBENCH_BPF_LOG_H
#define CAPBENCH_BPF_LOG_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <bpf/libbpf.h>

static int cb_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN && getenv("CAPBENCH_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static inline void cb_libbpf_quiet(void)
{
	libbpf_set_print(cb_libbpf_print);
}

#endif
