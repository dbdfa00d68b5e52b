/* SPDX-License-Identifier: MIT */
/* The work the counter does per packet (--app-load), like the seeds'
 * discard-at-library counter and their "packzip" application. */
#ifndef CAPBENCH_APP_LOAD_H
#define CAPBENCH_APP_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

enum app_load_kind {
	APP_LOAD_TOUCH, /* read the stamp and track the sequence (default) */
	APP_LOAD_NONE,  /* count frames only: no stamp read, every frame counts as received */
	APP_LOAD_COPY,  /* copy each packet once */
	APP_LOAD_SPIN,  /* busy-wait a fixed time per packet */
	APP_LOAD_ZLIB,  /* copy each packet and compress it with zlib (seed 001's "packzip") */
};

struct app_load {
	enum app_load_kind kind;
	uint64_t spin_ns;
	int zlib_level;      /* 0..9 */
};

struct app_load_state {
	uint8_t buf[65536];   /* the copy's destination */
	uint64_t sink;        /* keeps the compiler from dropping the copy */
	/* zlib: one deflate stream per worker, set up at the first packet and
	 * reset for each one, so a packet costs no allocation. */
	z_stream z;
	int z_ready;
	uint8_t zout[65536 + 1024];
	uint64_t z_in, z_out;  /* bytes compressed and what they became */
};

/* The forms --app-load takes, in the order --help names them; the last
 * has a NULL name. `param`: the NAME:PARAM form's parameter, in min..max. */
struct app_load_form {
	const char *name;
	enum app_load_kind kind;
	const char *param;
	uint64_t min, max;
	const char *help;
};
extern const struct app_load_form app_load_forms[];
#define APP_LOAD_DEFAULT "touch"

/* "touch", "none", "copy", "spin:NS", "zlib:N"; returns 0 or -EINVAL. */
int app_load_parse(const char *s, struct app_load *out);
/* "touch, none, copy, zlib:N (N from 0 to 9) or spin:NS (...)": the
 * grammar, for --help and error lines. */
void app_load_grammar(char *buf, size_t len);
/* Text form for the summary line ("spin:500"). */
void app_load_format(const struct app_load *l, char *buf, unsigned long len);
void app_load_apply_slow(const struct app_load *l, struct app_load_state *st,
			 const uint8_t *data, uint32_t len);
/* Release what the load holds (the deflate stream). */
void app_load_free(struct app_load_state *st);

static inline void app_load_apply(const struct app_load *l, struct app_load_state *st,
				  const uint8_t *data, uint32_t len)
{
	if (l->kind > APP_LOAD_NONE)
		app_load_apply_slow(l, st, data, len);
}

#endif
