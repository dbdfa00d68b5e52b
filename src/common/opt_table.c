/* SPDX-License-Identifier: MIT */
#include "opt_table.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Every row of the set, common then variants: calls fn(row, variant index
 * or -1). */
#define FOR_EACH_TABLE(s, t, vi)                                                  \
	for (int vi = -1; vi < 16 && (vi < 0 || (s)->variant[vi]); vi++)          \
		for (const struct cb_opt *t = vi < 0 ? (s)->common : (s)->variant[vi]; \
		     t && t->name; t++)

int cb_opt_not_power_of_two(uint64_t v)
{
	return !v || (v & (v - 1)) != 0;
}

/* The row takes v: within min..max and its own rule. */
static int takes(const struct cb_opt *o, uint64_t v)
{
	return v >= o->min && (!o->max || v <= o->max) && !(o->valid && o->valid(v));
}

unsigned int cb_opt_candidates(const struct cb_opt *o, uint64_t *out, unsigned int max)
{
	uint64_t lo, hi, v;
	unsigned int n = 0;

	if (!o->tunable || (o->type != CB_OPT_COUNT && o->type != CB_OPT_BYTES))
		return 0;
	lo = o->tune_min ? o->tune_min : o->min;
	hi = o->tune_max ? o->tune_max : o->max;
	if (!hi)
		hi = UINT64_MAX;
	for (v = 1; v && v <= hi && n < max; v <<= 1)
		if (v >= lo && takes(o, v))
			out[n++] = v;
	return n;
}

const struct cb_opt *cb_opt_find(const struct cb_opt *table, const char *name)
{
	for (; table && table->name; table++)
		if (!strcmp(table->name, name))
			return table;
	return NULL;
}

int cb_opt_choice_value(const struct cb_opt_choice *c, const char *name)
{
	for (; c && c->name; c++)
		if (!strcmp(c->name, name))
			return c->value;
	return -1;
}

const char *cb_opt_choice_name(const struct cb_opt_choice *c, int value)
{
	for (; c && c->name; c++)
		if (c->value == value)
			return c->name;
	return NULL;
}

void cb_opt_set_init(struct cb_opt_set *s, const struct cb_opt *common, const char *variant_flag)
{
	memset(s, 0, sizeof(*s));
	s->common = common;
	s->variant_flag = variant_flag;
}

void cb_opt_set_add(struct cb_opt_set *s, const char *name, const struct cb_opt *table)
{
	static const struct cb_opt none[] = { CB_OPT_END };
	int i = 0;

	while (i < 15 && s->variant[i])
		i++;
	if (i == 15)
		cb_fatal("more than 15 variants: raise the size of struct cb_opt_set");
	s->variant[i] = table ? table : none; /* NULL would end the list */
	s->variant_names[i] = name;
}

static int slot(const struct cb_opt_set *s, const char *name)
{
	for (unsigned int i = 0; i < s->n; i++)
		if (!strcmp(s->row[i]->name, name))
			return (int)i;
	return -1;
}

void cb_opt_collect(struct cb_opt_set *s, int argc, char **argv)
{
	static struct option longopts[CB_OPT_MAX_NAMES + 1];
	char shortopts[2 * CB_OPT_MAX_NAMES + 2] = ":";
	size_t sl = 1;
	int c, idx;

	s->n = 0;
	FOR_EACH_TABLE(s, t, vi) {
		if (slot(s, t->name) >= 0)
			continue;
		if (s->n == CB_OPT_MAX_NAMES)
			cb_fatal("more than %d options: raise CB_OPT_MAX_NAMES", CB_OPT_MAX_NAMES);
		s->row[s->n] = t;
		s->value[s->n] = NULL;
		s->given[s->n] = 0;
		longopts[s->n] = (struct option){ t->name,
			t->type == CB_OPT_FLAG ? no_argument : required_argument, NULL,
			256 + (int)s->n };
		if (t->short_name) {
			shortopts[sl++] = t->short_name;
			if (t->type != CB_OPT_FLAG)
				shortopts[sl++] = ':';
		}
		s->n++;
	}
	longopts[s->n] = (struct option){ NULL, 0, NULL, 0 };
	shortopts[sl] = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
		int i = -1;

		if (c >= 256)
			i = c - 256;
		else if (c != '?' && c != ':')
			for (unsigned int k = 0; k < s->n; k++)
				if (s->row[k]->short_name == c)
					i = (int)k;
		if (i < 0)
			cb_opt_fail(c, argv);
		s->given[i] = 1;
		s->value[i] = s->row[i]->type == CB_OPT_FLAG ? "" : optarg;
	}
	s->first_operand = optind;
	s->argc = argc;
	s->argv = argv;
	if (optind < argc && !s->takes_operands)
		cb_usage_error("unexpected argument '%s' (see --help)", argv[optind]);
}

const char *cb_opt_value(const struct cb_opt_set *s, const char *name)
{
	int i = slot(s, name);

	return i >= 0 && s->given[i] ? s->value[i] : NULL;
}

static void store(const struct cb_opt *o, void *cfg, uint64_t v)
{
	char *dst = (char *)cfg + o->off;

	switch (o->size) {
	case 1: *(uint8_t *)dst = (uint8_t)v; break;
	case 2: *(uint16_t *)dst = (uint16_t)v; break;
	case 4: *(uint32_t *)dst = (uint32_t)v; break;
	case 8: *(uint64_t *)dst = v; break;
	default: break;
	}
}

static void bad(const struct cb_opt *o, const char *value)
{
	char fix[256];

	if (o->fix_fn)
		o->fix_fn(fix, sizeof(fix));
	else
		snprintf(fix, sizeof(fix), "%s", o->fix ? o->fix : "see --help");
	cb_usage_error("bad --%s '%s': %s", o->name, value, fix);
}

/* "use a, b or c": the choices, for the error line. */
static void bad_choice(const struct cb_opt *o, const char *value)
{
	char list[256] = "use ";
	size_t n = 0;

	for (const struct cb_opt_choice *c = o->choices; c->name; c++)
		n++;
	for (size_t i = 0; i < n; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";

		strncat(list, sep, sizeof(list) - strlen(list) - 1);
		strncat(list, o->choices[i].name, sizeof(list) - strlen(list) - 1);
	}
	cb_usage_error("bad --%s '%s': %s", o->name, value, list);
}

void cb_opt_parse(const struct cb_opt *o, const char *value, void *cfg)
{
	char flag[64];
	uint64_t v = 0;
	int err = 0;

	snprintf(flag, sizeof(flag), "--%s", o->name);
	switch (o->type) {
	case CB_OPT_FLAG:
		v = (uint64_t)o->flag_value;
		break;
	case CB_OPT_CHOICE: {
		int c = cb_opt_choice_value(o->choices, value);

		if (c < 0)
			bad_choice(o, value);
		v = (uint64_t)c;
		break;
	}
	case CB_OPT_COUNT:
	case CB_OPT_MS:
		if (o->what)
			v = cb_opt_count(flag, value, o->what);
		else
			err = cb_parse_u64(value, &v);
		break;
	case CB_OPT_BYTES:
		err = cb_parse_bytes(value, &v);
		break;
	case CB_OPT_SECONDS:
		if (o->size == sizeof(double))
			*(double *)((char *)cfg + o->off) = o->seconds(flag, value);
		return;
	case CB_OPT_CPU:
		v = (uint64_t)(int64_t)cb_opt_cpu(flag, value);
		break;
	default: /* text the program checks */
		if (o->size == sizeof(const char *))
			*(const char **)((char *)cfg + o->off) = value;
		return;
	}
	if (o->type == CB_OPT_COUNT || o->type == CB_OPT_MS || o->type == CB_OPT_BYTES) {
		if (err || !takes(o, v))
			bad(o, value);
	}
	store(o, cfg, v);
}

void cb_opt_apply(const struct cb_opt_set *s, const struct cb_opt *table, void *cfg)
{
	for (const struct cb_opt *o = table; o && o->name; o++) {
		const char *v = cb_opt_value(s, o->name);

		if (v)
			cb_opt_parse(o, v, cfg);
	}
}

void cb_opt_apply_text(const struct cb_opt_set *s, const struct cb_opt *table, void *args)
{
	for (const struct cb_opt *o = table; o && o->name; o++) {
		const char *v = cb_opt_value(s, o->name);
		char *dst = (char *)args + o->off;

		if (!v || !o->size)
			continue;
		if (o->type == CB_OPT_FLAG)
			*(int *)dst = 1;
		else
			*(const char **)dst = v;
	}
}

/* The variants whose tables have --name, as a bit mask. */
static unsigned int owners(const struct cb_opt_set *s, const char *name)
{
	unsigned int mask = 0;

	for (int i = 0; i < 16 && s->variant[i]; i++)
		if (cb_opt_find(s->variant[i], name))
			mask |= 1u << i;
	return mask;
}

/* "a, b and c" into buf. */
static void join(char *buf, size_t len, const char *const *items, size_t n, const char *prefix)
{
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";

		strncat(buf, sep, len - strlen(buf) - 1);
		strncat(buf, prefix, len - strlen(buf) - 1);
		strncat(buf, items[i], len - strlen(buf) - 1);
	}
}

void cb_opt_check_owner(const struct cb_opt_set *s, const struct cb_opt *own, const char *variant)
{
	for (unsigned int i = 0; i < s->n; i++) {
		const char *names[CB_OPT_MAX_NAMES], *who[16];
		char opts[1024], vars[256];
		unsigned int mask, first, nn = 0, nw = 0;

		if (!s->given[i] || cb_opt_find(s->common, s->row[i]->name) ||
		    cb_opt_find(own, s->row[i]->name))
			continue;
		mask = owners(s, s->row[i]->name);
		first = (unsigned int)__builtin_ctz(mask);
		for (const struct cb_opt *o = s->variant[first]; o->name; o++)
			if (owners(s, o->name) == mask)
				names[nn++] = o->name;
		for (int v = 0; v < 16 && s->variant[v]; v++)
			if (mask & (1u << v))
				who[nw++] = s->variant_names[v];
		join(opts, sizeof(opts), names, nn, "--");
		join(vars, sizeof(vars), who, nw, "");
		cb_usage_error("%s %s of %s %s, not of %s", opts, nn > 1 ? "are options" : "is an option",
			       s->variant_flag, vars, variant);
	}
}

/* Print `text` from column `col`, wrapped before column 79; the first line
 * continues the current one. */
static void wrap(FILE *out, const char *text, int col, int at)
{
	const char *p = text;

	while (*p) {
		const char *end = p, *brk = NULL;

		while (*end && *end != '\n' && (end - p) + at < 79) {
			if (*end == ' ')
				brk = end;
			end++;
		}
		if (*end && *end != '\n' && brk)
			end = brk;
		fprintf(out, "%.*s\n", (int)(end - p), p);
		p = *end ? end + 1 : end;
		if (*p)
			fprintf(out, "%*s", col, "");
		at = col;
	}
}

/* A bytes default as the help's examples and cb_parse_bytes write it: 2M, not
 * 2097152 (k, M, G: powers of 1024). */
static void bytes_text(uint64_t v, char *buf, size_t len)
{
	static const char suffix[] = "kMG";
	int s = 0;

	v /= 1024;
	while (s < 2 && v % 1024 == 0) {
		v /= 1024;
		s++;
	}
	snprintf(buf, len, " (default %llu%c)", (unsigned long long)v, suffix[s]);
}

static void default_text(const struct cb_opt *o, char *buf, size_t len)
{
	buf[0] = 0;
	if (!o->has_default)
		return;
	if (o->def_text)
		snprintf(buf, len, " (default %s)", o->def_text);
	else if (o->type == CB_OPT_CHOICE)
		snprintf(buf, len, " (default %s)", cb_opt_choice_name(o->choices, (int)o->def));
	else if (o->type == CB_OPT_BYTES && o->def && o->def % 1024 == 0)
		bytes_text(o->def, buf, len);
	else
		snprintf(buf, len, " (default %llu)", (unsigned long long)o->def);
}

void cb_opt_help(FILE *out, const struct cb_opt *table)
{
	for (const struct cb_opt *o = table; o && o->name; o++) {
		char head[64], text[1024], def[128];
		int n;

		if (o->short_name)
			n = snprintf(head, sizeof(head), "  -%c, --%s%s%s", o->short_name, o->name,
				     o->arg ? " " : "", o->arg ? o->arg : "");
		else
			n = snprintf(head, sizeof(head), "      --%s%s%s", o->name, o->arg ? " " : "",
				     o->arg ? o->arg : "");
		default_text(o, def, sizeof(def));
		snprintf(text, sizeof(text), "%s%s", o->help, def);
		if (n >= 26) {
			fprintf(out, "%s\n%26s", head, "");
			n = 26;
		} else {
			fprintf(out, "%-26s", head);
			n = 26;
		}
		wrap(out, text, 26, n);
	}
}

static const char *const type_names[] = {
	[CB_OPT_STRING] = "string", [CB_OPT_FLAG] = "flag", [CB_OPT_COUNT] = "count",
	[CB_OPT_BYTES] = "bytes", [CB_OPT_MS] = "ms", [CB_OPT_CHOICE] = "choice",
	[CB_OPT_CPUS] = "cpus", [CB_OPT_QUEUES] = "queues", [CB_OPT_SECONDS] = "seconds",
	[CB_OPT_CPU] = "cpu",
};

/* A tunable row's "candidates": its numbers, or its choices' names. */
static void put_candidates(struct cb_json *j, const struct cb_opt *o)
{
	uint64_t v[64];
	unsigned int n;

	if (!o->tunable)
		return;
	cb_json_arr_begin(j, "candidates");
	if (o->type == CB_OPT_CHOICE) {
		for (const struct cb_opt_choice *c = o->choices; c->name; c++)
			cb_json_arr_str(j, c->name);
	} else if (o->type == CB_OPT_FLAG) { /* left out, given */
		cb_json_arr_str(j, "off");
		cb_json_arr_str(j, "on");
	} else {
		n = cb_opt_candidates(o, v, 64);
		for (unsigned int i = 0; i < n; i++)
			cb_json_arr_u64(j, v[i]);
	}
	cb_json_arr_end(j);
}

void cb_opt_describe(struct cb_json *j, const char *key, const struct cb_opt *table)
{
	char name[64];

	cb_json_arr_begin(j, key);
	for (const struct cb_opt *o = table; o && o->name; o++) {
		cb_json_elem_begin(j);
		snprintf(name, sizeof(name), "--%s", o->name);
		cb_json_str(j, "name", name);
		if (o->short_name) {
			char short_name[3] = { '-', o->short_name, 0 };

			cb_json_str(j, "short", short_name);
		}
		cb_json_str(j, "type", type_names[o->type]);
		if (o->type == CB_OPT_COUNT || o->type == CB_OPT_BYTES || o->type == CB_OPT_MS ||
		    (o->type == CB_OPT_SECONDS && o->max)) {
			cb_json_u64(j, "min", o->min);
			if (o->max)
				cb_json_u64(j, "max", o->max);
		}
		if (o->type == CB_OPT_FLAG) /* a flag not given is off */
			cb_json_bool(j, "default", 0);
		else if (!o->has_default)
			cb_json_str(j, "default", NULL);
		else if (o->def_text)
			cb_json_str(j, "default", o->def_text);
		else if (o->type == CB_OPT_CHOICE)
			cb_json_str(j, "default", cb_opt_choice_name(o->choices, (int)o->def));
		else
			cb_json_u64(j, "default", o->def);
		if (o->type == CB_OPT_CHOICE) {
			cb_json_arr_begin(j, "choices");
			for (const struct cb_opt_choice *c = o->choices; c->name; c++)
				cb_json_arr_str(j, c->name);
			cb_json_arr_end(j);
		}
		put_candidates(j, o);
		cb_json_str(j, "help", o->help);
		cb_json_obj_end(j);
	}
	cb_json_arr_end(j);
}

void cb_opt_describe_begin(struct cb_json *j, const char *program, unsigned int version)
{
	cb_json_begin(j, NULL);
	cb_json_str(j, "program", program);
	cb_json_u64(j, "describe_version", version);
	cb_json_str(j, "version", CAPBENCH_VERSION);
}

void cb_opt_describe_variant(struct cb_json *j, const char *name, const char *summary,
			     const char *seed, const struct cb_opt *options)
{
	static const struct cb_opt none[] = { CB_OPT_END };

	cb_json_elem_begin(j);
	cb_json_str(j, "name", name);
	cb_json_str(j, "summary", summary);
	cb_json_str(j, "seed", seed);
	cb_opt_describe(j, "options", options ? options : none);
}
