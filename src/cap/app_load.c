/* SPDX-License-Identifier: MIT */
#include "app_load.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* The --app-load grammar: parsed with this table, and described from it
 * (capbench-cap --describe). A form with a parameter is NAME:PARAM. */
const struct app_load_form app_load_forms[] = {
	{ "touch", APP_LOAD_TOUCH, NULL, 0, 0, "read the stamp and track the sequence numbers" },
	{ "none", APP_LOAD_NONE, NULL, 0, 0, "count frames only, no stamp check" },
	{ "copy", APP_LOAD_COPY, NULL, 0, 0, "copy each packet once" },
	{ "zlib", APP_LOAD_ZLIB, "N", 0, 9,
	  "copy and compress each packet with zlib level N, the seeds' packzip" },
	{ "spin", APP_LOAD_SPIN, "NS", 1, 1000000000, "NS ns of CPU per packet" },
	{ NULL, 0, NULL, 0, 0, NULL },
};

int app_load_parse(const char *s, struct app_load *out)
{
	memset(out, 0, sizeof(*out));
	for (const struct app_load_form *f = app_load_forms; f->name; f++) {
		size_t n = strlen(f->name);
		uint64_t v;

		if (strncmp(s, f->name, n) || (f->param ? s[n] != ':' : s[n] != 0))
			continue;
		out->kind = f->kind;
		if (!f->param)
			return 0;
		if (cb_parse_u64(s + n + 1, &v) || v < f->min || v > f->max)
			return -EINVAL;
		if (f->kind == APP_LOAD_ZLIB)
			out->zlib_level = (int)v;
		else
			out->spin_ns = v;
		return 0;
	}
	return -EINVAL;
}

void app_load_grammar(char *buf, size_t len)
{
	size_t n = 0;

	while (app_load_forms[n].name)
		n++;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const struct app_load_form *f = &app_load_forms[i];
		size_t at = strlen(buf);

		snprintf(buf + at, len - at, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", f->name);
		at = strlen(buf);
		if (f->param)
			snprintf(buf + at, len - at, ":%s (%s from %llu to %llu)", f->param, f->param,
				 (unsigned long long)f->min, (unsigned long long)f->max);
	}
}

void app_load_format(const struct app_load *l, char *buf, unsigned long len)
{
	const struct app_load_form *f = app_load_forms;

	while (f->name && f->kind != l->kind)
		f++;
	if (l->kind == APP_LOAD_SPIN)
		snprintf(buf, len, "%s:%llu", f->name, (unsigned long long)l->spin_ns);
	else if (l->kind == APP_LOAD_ZLIB)
		snprintf(buf, len, "%s:%d", f->name, l->zlib_level);
	else
		snprintf(buf, len, "%s", f->name);
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
