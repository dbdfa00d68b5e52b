/* SPDX-License-Identifier: MIT */
#include "app_load.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

int app_load_parse(const char *s, struct app_load *out)
{
	memset(out, 0, sizeof(*out));
	if (!strcmp(s, "touch")) {
		out->kind = APP_LOAD_TOUCH;
	} else if (!strcmp(s, "none")) {
		out->kind = APP_LOAD_NONE;
	} else if (!strcmp(s, "copy")) {
		out->kind = APP_LOAD_COPY;
	} else if (!strncmp(s, "zlib:", 5)) {
		uint64_t level;

		out->kind = APP_LOAD_ZLIB;
		if (cb_parse_u64(s + 5, &level) || level > 9)
			return -EINVAL;
		out->zlib_level = (int)level;
	} else if (!strncmp(s, "spin:", 5)) {
		out->kind = APP_LOAD_SPIN;
		if (cb_parse_u64(s + 5, &out->spin_ns) || out->spin_ns == 0 ||
		    out->spin_ns > 1000000000ull)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	return 0;
}

void app_load_format(const struct app_load *l, char *buf, unsigned long len)
{
	static const char *const names[] = { "touch", "none", "copy", "spin", "zlib" };

	if (l->kind == APP_LOAD_SPIN)
		snprintf(buf, len, "spin:%llu", (unsigned long long)l->spin_ns);
	else if (l->kind == APP_LOAD_ZLIB)
		snprintf(buf, len, "zlib:%d", l->zlib_level);
	else
		snprintf(buf, len, "%s", names[l->kind]);
}

void app_load_apply_slow(const struct app_load *l, struct app_load_state *st,
			 const uint8_t *data, uint32_t len)
{
	switch (l->kind) {
	case APP_LOAD_COPY:
		if (!len)
			break;
		if (len > sizeof(st->buf))
			len = sizeof(st->buf);
		memcpy(st->buf, data, len);
		/* Read the copy back so the compiler cannot elide it. */
		st->sink += st->buf[len - 1];
		break;
	case APP_LOAD_SPIN: {
		/* clock_gettime through the vDSO costs ~20 ns here, so the
		 * wait is accurate to that. */
		/* The thread's own CPU time, not the wall clock: a counter that the
		 * receive work (a NAPI thread at real-time priority) preempts still
		 * does its NS of work per packet. */
		uint64_t until = cb_thread_cpu_ns() + l->spin_ns;

		while (cb_thread_cpu_ns() < until)
			;
		break;
	}
	case APP_LOAD_ZLIB:
		if (len > sizeof(st->buf))
			len = sizeof(st->buf);
		memcpy(st->buf, data, len);
		if (!st->z_ready) {
			memset(&st->z, 0, sizeof(st->z));
			if (deflateInit(&st->z, l->zlib_level) != Z_OK)
				break; /* out of memory: the packet goes uncompressed */
			st->z_ready = 1;
		} else {
			deflateReset(&st->z);
		}
		/* One packet, one complete deflate stream, as a compressing
		 * capture writer would store it. */
		st->z.next_in = st->buf;
		st->z.avail_in = len;
		st->z.next_out = st->zout;
		st->z.avail_out = sizeof(st->zout);
		deflate(&st->z, Z_FINISH);
		st->z_in += len;
		st->z_out += sizeof(st->zout) - st->z.avail_out;
		break;
	default:
		break;
	}
}

void app_load_free(struct app_load_state *st)
{
	if (st->z_ready)
		deflateEnd(&st->z);
	st->z_ready = 0;
}
