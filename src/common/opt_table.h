/* SPDX-License-Identifier: MIT */
/*
 * Option tables: each option is declared once, as a row (name, type, range,
 * default, help, where its value goes), and that row drives the getopt
 * table, the parse and range check, the --help text and the --describe JSON
 * (the way xdp-tools' DEFINE_OPTION tables drive its parser and its help).
 *
 * A program has a table of common options and, per variant (a capture
 * backend, a generator engine), a table of the variant's own; an option
 * several variants take is a row in each of their tables, with each one's
 * range. The parse runs in two steps: cb_opt_collect() takes argv into one
 * string per option name (the variant may be named anywhere on the line),
 * then cb_opt_apply() checks and stores each given value with the row of the
 * table it belongs to.
 */
#ifndef CAPBENCH_OPT_TABLE_H
#define CAPBENCH_OPT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "jsonl.h"

enum cb_opt_type {
	CB_OPT_STRING,  /* stored as const char * (checked by the program) */
	CB_OPT_FLAG,    /* no value; stores flag_value (an int) */
	CB_OPT_COUNT,   /* a whole number in min..max */
	CB_OPT_BYTES,   /* bytes, with k/M/G suffixes (cb_parse_bytes), in min..max */
	CB_OPT_MS,      /* milliseconds, a whole number in min..max */
	CB_OPT_CHOICE,  /* one of choices[]; stores its value (an int) */
	CB_OPT_CPUS,    /* a CPU list (0,1 or 0-3), stored as text */
	CB_OPT_QUEUES,  /* receive queues (a list or all), stored as text */
	CB_OPT_SECONDS, /* a time (5, 5s, 250ms), stored as double */
	CB_OPT_CPU,     /* one CPU of this machine, stored as int */
};

struct cb_opt_choice {
	const char *name;
	int value;
};

struct cb_opt {
	const char *name;      /* without the dashes: "block-size" */
	char short_name;       /* 'i', or 0 */
	enum cb_opt_type type;
	const char *arg;       /* the value's name in --help ("BYTES"); NULL for a flag */
	uint64_t min, max;     /* COUNT, BYTES, MS (max 0: none); said in --describe */
	int has_default;       /* default: the number `def`, or the words `def_text` */
	uint64_t def;
	const char *def_text;
	const struct cb_opt_choice *choices; /* CHOICE: ends with a NULL name */
	const char *help;      /* one sentence, wrapped by --help */
	/* A bad value: "bad --NAME 'VALUE': FIX". `what`: COUNT values are read
	 * by cb_opt_count (its message for what is not 1..10^15), and `fix`
	 * then only says the range. */
	const char *fix;
	const char *what;
	/* The check of a rule that is not a range (a power of two, a multiple
	 * of 16): 0 if v is good. */
	int (*valid)(uint64_t v);
	/* A fix that names a value known at run time (the page size). */
	void (*fix_fn)(char *buf, size_t len);
	/* SECONDS: the bounds, and the parser (cb_opt_seconds or interval). */
	double (*seconds)(const char *flag, const char *s);
	/* Where the value goes in the program's configuration; size 0: the
	 * program reads it with cb_opt_value(). */
	size_t off;
	unsigned int size;
	int flag_value;        /* FLAG: what it stores */
	/* A knob (capbench tune, capbench run --vary): an option that changes
	 * how the capture loses, with the values a search tries. COUNT and
	 * BYTES: the powers of two from tune_min to tune_max (0: the row's min,
	 * max) that the row takes; CHOICE: every choice; FLAG: "off" (left out)
	 * and "on" (given). --describe prints them
	 * as the option's "candidates". */
	int tunable;
	uint64_t tune_min, tune_max;
};

#define CB_OPT_END { .name = NULL }
/* The destination field of an option: CB_OPT_AT(struct cap_cfg, batch). */
#define CB_OPT_AT(type, field) .off = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* The program's tables, for the parse: common first, then every variant's. */
#define CB_OPT_MAX_NAMES 96
struct cb_opt_set {
	const struct cb_opt *common;
	const struct cb_opt *variant[16];  /* NULL-terminated */
	const char *variant_names[16];     /* "afp-v3" */
	const char *variant_flag;          /* "--backend" */
	/* What cb_opt_collect found: each distinct option name once. */
	unsigned int n;
	const struct cb_opt *row[CB_OPT_MAX_NAMES]; /* the first row of that name */
	const char *value[CB_OPT_MAX_NAMES];        /* NULL: not given; "" for a flag */
	int given[CB_OPT_MAX_NAMES];
	/* Operands after the options (getopt puts them last): refused unless
	 * the program sets takes_operands before cb_opt_collect; then argv
	 * [first_operand, argc) are they. */
	int takes_operands;
	int first_operand, argc;
	char **argv;
};

/* The set of a program: its common table and the option that names the
 * variant ("--backend"); then each variant's name and table, in order. */
void cb_opt_set_init(struct cb_opt_set *s, const struct cb_opt *common, const char *variant_flag);
void cb_opt_set_add(struct cb_opt_set *s, const char *name, const struct cb_opt *table);

/* Read argv (getopt_long over every table; a repeated option keeps its last
 * value). -h/--help and --describe are not handled here: the program gives
 * rows for them in its common table and reads them after. Unknown options
 * and extra arguments (unless s->takes_operands) end the program with a
 * usage error. */
void cb_opt_collect(struct cb_opt_set *s, int argc, char **argv);
/* The value given for --name (NULL: not given; "" for a flag). */
const char *cb_opt_value(const struct cb_opt_set *s, const char *name);
/* Check and store the given options of `table` into cfg. */
void cb_opt_apply(const struct cb_opt_set *s, const struct cb_opt *table, void *cfg);
/* For a program that checks the values itself: store each given option's
 * text (a flag: 1, an int) at its row's place in `args`. */
void cb_opt_apply_text(const struct cb_opt_set *s, const struct cb_opt *table, void *args);
/* Refuse every given option that is neither common nor in table `own` of
 * variant `variant`: "--a and --b are options of --backend x and y, not of
 * z" (the options that have the same owners, named together). */
void cb_opt_check_owner(const struct cb_opt_set *s, const struct cb_opt *own, const char *variant);
/* Parse one value with its row (exits 2 when bad) into dst. */
void cb_opt_parse(const struct cb_opt *o, const char *value, void *cfg);

/* A tunable row's numeric candidates (COUNT, BYTES), ascending, into out[]
 * (at most `max`); returns how many. 0 for a row that is not tunable or not
 * numeric. */
unsigned int cb_opt_candidates(const struct cb_opt *o, uint64_t *out, unsigned int max);

/* A `valid` check: nonzero for what is not a power of two. */
int cb_opt_not_power_of_two(uint64_t v);

/* Find a row by name in a table; NULL if absent. */
const struct cb_opt *cb_opt_find(const struct cb_opt *table, const char *name);
/* A choice's value by name (-1: none) and name by value (NULL: none). */
int cb_opt_choice_value(const struct cb_opt_choice *c, const char *name);
const char *cb_opt_choice_name(const struct cb_opt_choice *c, int value);

/* --help: the rows of a table, "  -i, --iface IF      help (default ...)",
 * wrapped to 79 columns. */
void cb_opt_help(FILE *out, const struct cb_opt *table);
/* --describe: the table as a JSON array under `key`. */
void cb_opt_describe(struct cb_json *j, const char *key, const struct cb_opt *table);
/* --describe: begin the document ({"program", "describe_version", "version":
 * capbench's release, meson's project version}), and
 * begin one variant's object in an array ({"name", "summary", "seed",
 * "options"}; the caller adds its capabilities and ends it). */
void cb_opt_describe_begin(struct cb_json *j, const char *program, unsigned int version);
void cb_opt_describe_variant(struct cb_json *j, const char *name, const char *summary,
			     const char *seed, const struct cb_opt *options);

#endif
