/* SPDX-License-Identifier: MIT */
#include "jsonl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

static void put(struct cb_json *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct cb_json *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(j->buf + j->len, sizeof(j->buf) - j->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(j->buf) - j->len)
		j->overflow = 1;
	else
		j->len += (size_t)n;
}

static void put_string(struct cb_json *j, const char *s)
{
	put(j, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			put(j, "\\%c", c);
		else if (c < 0x20)
			put(j, "\\u%04x", c);
		else
			put(j, "%c", c);
	}
	put(j, "\"");
}

static void key(struct cb_json *j, const char *k)
{
	if (j->need_comma)
		put(j, ",");
	put_string(j, k);
	put(j, ":");
	j->need_comma = 1;
}

void cb_json_begin(struct cb_json *j, const char *type)
{
	j->len = 0;
	j->overflow = 0;
	j->need_comma = 0;
	put(j, "{");
	if (type)
		cb_json_str(j, "type", type);
}

void cb_json_u64(struct cb_json *j, const char *k, uint64_t v)
{
	key(j, k);
	put(j, "%llu", (unsigned long long)v);
}

void cb_json_i64(struct cb_json *j, const char *k, int64_t v)
{
	key(j, k);
	put(j, "%lld", (long long)v);
}

void cb_json_double(struct cb_json *j, const char *k, double v)
{
	key(j, k);
	if (isfinite(v))
		put(j, "%.17g", v);
	else
		put(j, "null"); /* JSON has no NaN or infinity */
}

void cb_json_epoch_ms(struct cb_json *j, const char *k, uint64_t ns)
{
	uint64_t ms = (ns + 500000) / 1000000;

	key(j, k);
	put(j, "%llu.%03u", (unsigned long long)(ms / 1000), (unsigned int)(ms % 1000));
}

void cb_json_str(struct cb_json *j, const char *k, const char *v)
{
	key(j, k);
	if (v)
		put_string(j, v);
	else
		put(j, "null");
}

void cb_json_bool(struct cb_json *j, const char *k, int v)
{
	key(j, k);
	put(j, v ? "true" : "false");
}

void cb_json_obj_begin(struct cb_json *j, const char *k)
{
	key(j, k);
	put(j, "{");
	j->need_comma = 0;
}

void cb_json_obj_end(struct cb_json *j)
{
	put(j, "}");
	j->need_comma = 1;
}

void cb_json_arr_begin(struct cb_json *j, const char *k)
{
	key(j, k);
	put(j, "[");
	j->need_comma = 0;
}

void cb_json_elem_begin(struct cb_json *j)
{
	if (j->need_comma)
		put(j, ",");
	put(j, "{");
	j->need_comma = 0;
}

void cb_json_arr_u64(struct cb_json *j, uint64_t v)
{
	if (j->need_comma)
		put(j, ",");
	put(j, "%llu", (unsigned long long)v);
	j->need_comma = 1;
}

void cb_json_arr_i64(struct cb_json *j, int64_t v)
{
	if (j->need_comma)
		put(j, ",");
	put(j, "%lld", (long long)v);
	j->need_comma = 1;
}

void cb_json_arr_str(struct cb_json *j, const char *v)
{
	if (j->need_comma)
		put(j, ",");
	put_string(j, v);
	j->need_comma = 1;
}

void cb_json_arr_end(struct cb_json *j)
{
	put(j, "]");
	j->need_comma = 1;
}

void cb_json_strs(struct cb_json *j, const char *k, const char *const *v, size_t max)
{
	cb_json_arr_begin(j, k);
	for (size_t i = 0; i < max && v[i]; i++)
		cb_json_arr_str(j, v[i]);
	cb_json_arr_end(j);
}

int cb_json_end(struct cb_json *j, FILE *out)
{
	put(j, "}\n");
	if (j->overflow)
		return -EOVERFLOW;
	if (fwrite(j->buf, 1, j->len, out) != j->len || fflush(out))
		return -EIO;
	return 0;
}
