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
	static const char *const names[] = { "touch", "none", "copy", "spin" };

	if (l->kind == APP_LOAD_SPIN)
		snprintf(buf, len, "spin:%llu", (unsigned long long)l->spin_ns);
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
		uint64_t until = cb_now_ns() + l->spin_ns;

		while (cb_now_ns() < until)
			;
		break;
	}
	default:
		break;
	}
}
