/* SPDX-License-Identifier: MIT */
#include "sizes.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stamp.h"
#include "util.h"

static const unsigned int rfc2544_lens[] = { 64, 128, 256, 512, 1024, 1280, 1518 };
static const unsigned int seed_lens[] = { 64, 73, 128, 207, 256, 313, 512, 726, 1024,
					  1174, 1280, 1319, 1518 };
static const unsigned int imix_seed_lens[] = { 64, 570, 594, 1518 };
static const double imix_seed_weights[] = { 57, 7, 16, 20 };
static const unsigned int imix_simple_lens[] = { 64, 594, 1518 };
static const double imix_simple_weights[] = { 7, 4, 1 };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The message is one line on a terminal whatever a file held: a dist: row
 * echoed into it may carry control bytes (cb_printable). */
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (errlen)
		cb_printable(err);
	return code;
}

static int len_ok(uint64_t v)
{
	return v >= CB_FRAME_MIN && v <= CB_FRAME_MAX;
}

static void finish_bounds(struct cb_size_profile *p)
{
	p->min_len = UINT32_MAX;
	p->max_len = 0;
	for (unsigned int i = 0; i < p->n; i++) {
		if (p->lens[i] < p->min_len)
			p->min_len = p->lens[i];
		if (p->lens[i] > p->max_len)
			p->max_len = p->lens[i];
	}
}

int cb_sizes_cycle(struct cb_size_profile *p, const unsigned int *lens, unsigned int n)
{
	double sum = 0;

	memset(p, 0, sizeof(*p));
	p->kind = CB_SIZES_CYCLE;
	p->lens = malloc(n * sizeof(*p->lens));
	if (!p->lens)
		return -ENOMEM;
	memcpy(p->lens, lens, n * sizeof(*lens));
	p->n = n;
	for (unsigned int i = 0; i < n; i++)
		sum += lens[i];
	p->mean_len = sum / n;
	finish_bounds(p);
	return 0;
}

int cb_sizes_weighted(struct cb_size_profile *p, const unsigned int *lens,
		      const double *weights, unsigned int n)
{
	double total = 0, acc = 0, mean = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (!(weights[i] >= 0) || !isfinite(weights[i]))
			return -EINVAL;
		total += weights[i];
	}
	if (!n || !(total > 0) || !isfinite(total))
		return -EINVAL;
	p->kind = CB_SIZES_WEIGHTED;
	p->lens = malloc(n * sizeof(*p->lens));
	p->cdf = malloc(n * sizeof(*p->cdf));
	if (!p->lens || !p->cdf) {
		cb_sizes_free(p);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		acc += weights[i];
		p->lens[i] = lens[i];
		p->cdf[i] = acc / total;
		mean += lens[i] * (weights[i] / total); /* weights near DBL_MAX: no overflow */
	}
	p->cdf[n - 1] = 1.0;
	p->n = n;
	finish_bounds(p);
	/* The shares may add up to a hair below or above 1 (found by fuzz_dist:
	 * 64 B weighted .05 and 2e-3 gave a mean of 63.999... B); the mean of
	 * lengths lies within them. */
	p->mean_len = fmin(fmax(mean, p->min_len), p->max_len);
	return 0;
}

/* "64,594,1518" (or one number). */
extern const struct cb_size_form cb_size_forms[];

/* "rfc2544, seed, imix:seed, ...": the forms of every profile but lists. */
static const char *profile_names(void)
{
	static char names[256];

	names[0] = 0;
	for (const struct cb_size_form *f = cb_size_forms; f->name && f->match; f++)
		for (int i = 0; i < 4 && f->forms[i]; i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 names[0] ? ", " : "", f->forms[i]);
	return names;
}

static int parse_list(const char *spec, struct cb_size_profile *p, char *err, size_t errlen)
{
	unsigned int lens[1024], n = 0;
	char buf[64];
	const char *s = spec;

	while (*s) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		uint64_t v;

		if (n == N_OF(lens))
			return fail(err, errlen, -EINVAL, "--size '%s' lists more than %zu lengths",
				    spec, N_OF(lens));
		if (len == 0 || len >= sizeof(buf))
			return fail(err, errlen, -EINVAL, "bad --size '%s': give frame lengths in "
				    "bytes separated by commas, or a profile (see --help)", spec);
		memcpy(buf, s, len);
		buf[len] = 0;
		if (cb_parse_u64(buf, &v))
			return fail(err, errlen, -EINVAL, "unknown --size '%s': give a length (64), a "
				    "list (64,594,1518) or a profile: %s", spec, profile_names());
		if (!len_ok(v))
			return fail(err, errlen, -ERANGE, "--size %s: %s B is outside %d..%d B "
				    "(frame lengths count the 4 B FCS; 64 is the Ethernet minimum)",
				    spec, buf, CB_FRAME_MIN, CB_FRAME_MAX);
		lens[n++] = (unsigned int)v;
		s += len + (comma ? 1 : 0);
		if (comma && !*s)
			return fail(err, errlen, -EINVAL, "bad --size '%s': a comma ends the list", spec);
	}
	if (!n)
		return fail(err, errlen, -EINVAL, "empty --size: give a frame length, e.g. 64");
	return cb_sizes_cycle(p, lens, n);
}

static int parse_random(const char *spec, const char *range, struct cb_size_profile *p,
			char *err, size_t errlen)
{
	char lo_s[32], hi_s[32];
	const char *dash = strchr(range, '-');
	uint64_t lo, hi;

	if (!dash || (size_t)(dash - range) >= sizeof(lo_s) || strlen(dash + 1) >= sizeof(hi_s))
		return fail(err, errlen, -EINVAL, "bad --size '%s': use random:MIN-MAX, e.g. "
			    "random:64-1518", spec);
	memcpy(lo_s, range, (size_t)(dash - range));
	lo_s[dash - range] = 0;
	strcpy(hi_s, dash + 1);
	if (cb_parse_u64(lo_s, &lo) || cb_parse_u64(hi_s, &hi) || lo > hi)
		return fail(err, errlen, -EINVAL, "bad --size '%s': use random:MIN-MAX with "
			    "MIN <= MAX, e.g. random:64-1518", spec);
	if (!len_ok(lo) || !len_ok(hi))
		return fail(err, errlen, -ERANGE, "--size %s: lengths must lie within %d..%d B",
			    spec, CB_FRAME_MIN, CB_FRAME_MAX);
	p->kind = CB_SIZES_UNIFORM;
	p->min_len = (unsigned int)lo;
	p->max_len = (unsigned int)hi;
	p->mean_len = (lo + hi) / 2.0;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

/* "length,weight" rows; blank lines and # comments skipped; a first row that
 * is not numeric is a header. The file may start with a UTF-8 byte order
 * mark (spreadsheets write one) and end its lines in CR LF. Lines may be of
 * any length: the whole file (at most CB_DIST_FILE_MAX) is read first. */
static int parse_dist(const char *path, struct cb_size_profile *p, char *err, size_t errlen)
{
	char what[512];
	unsigned int *lens = NULL, n = 0, cap = 0, lineno = 0, rows = 0;
	double *weights = NULL, total = 0;
	char *text = NULL, *line, *next;
	size_t size;
	int rc = 0;

	snprintf(what, sizeof(what), "--size dist:%s", path);
	rc = cb_read_regular(path, what, CB_DIST_FILE_MAX, &text, &size, err, errlen);
	if (rc)
		return rc == -ENOENT || rc == -ENOMEM ? rc : -EINVAL;
	for (line = text; line < text + size; line = next) {
		char *nl = memchr(line, '\n', (size_t)(text + size - line)), *s, *comma, *len_s, *w_s;
		uint64_t len;
		double w;

		next = nl ? nl + 1 : text + size;
		if (nl)
			*nl = 0;
		lineno++;
		if (strlen(line) != (size_t)(next - line) - (nl ? 1 : 0)) {
			rc = fail(err, errlen, -EINVAL, "%s line %u holds a NUL byte: give a text file of "
				  "'length,weight' rows", path, lineno);
			goto out;
		}
		s = line;
		if (lineno == 1 && !strncmp(s, "\xef\xbb\xbf", 3))
			s += 3; /* the UTF-8 byte order mark */
		s = trim(s);
		if (!*s || *s == '#')
			continue;
		rows++;
		comma = strchr(s, ',');
		if (!comma) {
			rc = fail(err, errlen, -EINVAL, "%s line %u: expected 'length,weight', got '%.40s%s'",
				  path, lineno, s, strlen(s) > 40 ? "..." : "");
			goto out;
		}
		*comma = 0;
		len_s = trim(s);
		w_s = trim(comma + 1);
		if (cb_parse_u64(len_s, &len) || cb_parse_double(w_s, &w)) {
			/* A header such as "length,weight": the first row, with no
			 * digit in either column ("64,abc", "1518B,20" and "-64,1"
			 * are bad rows, not headers). */
			if (rows == 1 && !strpbrk(len_s, "0123456789") && !strpbrk(w_s, "0123456789"))
				continue;
			rc = fail(err, errlen, -EINVAL, "%s line %u: '%.20s,%.20s' is not a length and a "
				  "finite number", path, lineno, len_s, w_s);
			goto out;
		}
		if (!len_ok(len)) {
			rc = fail(err, errlen, -ERANGE, "%s line %u: length %.40s is outside %d..%d B",
				  path, lineno, len_s, CB_FRAME_MIN, CB_FRAME_MAX);
			goto out;
		}
		if (!(w >= 0) || !isfinite(w)) {
			rc = fail(err, errlen, -EINVAL, "%s line %u: weight %.40s is negative or not a "
				  "number: weights must be >= 0", path, lineno, w_s);
			goto out;
		}
		if (!isfinite(total + w)) {
			rc = fail(err, errlen, -ERANGE, "%s line %u: the weights add up to more than %g: "
				  "give smaller weights (only their ratios count)", path, lineno, DBL_MAX);
			goto out;
		}
		if (n == cap) {
			unsigned int ncap = cap ? cap * 2 : 64;
			unsigned int *nl = realloc(lens, ncap * sizeof(*lens));
			double *nw;

			if (!nl) {
				rc = -ENOMEM;
				goto out;
			}
			lens = nl;
			nw = realloc(weights, ncap * sizeof(*weights));
			if (!nw) {
				rc = -ENOMEM;
				goto out;
			}
			weights = nw;
			cap = ncap;
		}
		lens[n] = (unsigned int)len;
		weights[n++] = w;
		total += w;
	}
	if (!n || !(total > 0)) {
		rc = fail(err, errlen, -EINVAL, "%s: no rows with a positive weight: give "
			  "'length,weight' rows whose weights add up to more than 0", path);
		goto out;
	}
	rc = cb_sizes_weighted(p, lens, weights, n);
out:
	free(text);
	free(lens);
	free(weights);
	return rc;
}

static int parse_rfc2544(const char *spec, const char *rest, struct cb_size_profile *p,
			 char *err, size_t errlen)
{
	return cb_sizes_cycle(p, rfc2544_lens, N_OF(rfc2544_lens));
}

static int parse_seed(const char *spec, const char *rest, struct cb_size_profile *p,
		      char *err, size_t errlen)
{
	return cb_sizes_cycle(p, seed_lens, N_OF(seed_lens));
}

static int parse_imix(const char *spec, const char *rest, struct cb_size_profile *p,
		      char *err, size_t errlen)
{
	if (!strcmp(rest, "seed"))
		return cb_sizes_weighted(p, imix_seed_lens, imix_seed_weights, N_OF(imix_seed_lens));
	if (!strcmp(rest, "simple"))
		return cb_sizes_weighted(p, imix_simple_lens, imix_simple_weights,
					 N_OF(imix_simple_lens));
	return fail(err, errlen, -EINVAL, "unknown IMIX '%s': use imix:seed (57/7/16/20 %% "
		    "of 64/570/594/1518 B) or imix:simple (7:4:1 of 64/594/1518 B)", spec);
}

static int parse_random_form(const char *spec, const char *rest, struct cb_size_profile *p,
			     char *err, size_t errlen)
{
	return parse_random(spec, rest, p, err, errlen);
}

static int parse_dist_form(const char *spec, const char *rest, struct cb_size_profile *p,
			   char *err, size_t errlen)
{
	return parse_dist(rest, p, err, errlen);
}

static int parse_trace_form(const char *spec, const char *rest, struct cb_size_profile *p,
			    char *err, size_t errlen)
{
	return cb_sizes_from_pcap(rest, p, err, errlen);
}

static int parse_list_form(const char *spec, const char *rest, struct cb_size_profile *p,
			   char *err, size_t errlen)
{
	return parse_list(spec, p, err, errlen);
}

/* What --size takes: parsed with this table, and described from it
 * (capbench-gen --describe). The first form that matches wins. */
const struct cb_size_form cb_size_forms[] = {
	{ "rfc2544", { "rfc2544" }, "rfc2544", parse_rfc2544,
	  "RFC 2544's 7 lengths (64 to 1518 B), cycled", rfc2544_lens, N_OF(rfc2544_lens) },
	{ "seed", { "seed" }, "seed", parse_seed, "seed 000's 13 lengths, cycled", seed_lens,
	  N_OF(seed_lens) },
	{ "imix", { "imix:seed", "imix:simple" }, "imix:", parse_imix,
	  "57/7/16/20 % of 64/570/594/1518 B (seed), 7:4:1 of 64/594/1518 B (simple)", NULL, 0 },
	{ "random", { "random:MIN-MAX" }, "random:", parse_random_form, "uniform lengths", NULL, 0 },
	{ "dist", { "dist:FILE.csv" }, "dist:", parse_dist_form, "'length,weight' rows", NULL, 0 },
	{ "trace", { "trace:FILE.pcap" }, "trace:", parse_trace_form,
	  "the length distribution of a capture", NULL, 0 },
	{ "list", { "64", "64,594,1518" }, NULL, parse_list_form,
	  "a length incl. the 4 B FCS, or a list, cycled", NULL, 0 },
	{ NULL, { NULL }, NULL, NULL, NULL, NULL, 0 },
};

int cb_sizes_parse(const char *spec, struct cb_size_profile *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	for (const struct cb_size_form *f = cb_size_forms; f->name; f++) {
		size_t n = f->match ? strlen(f->match) : 0;

		if (!f->match)
			return f->parse(spec, spec, p, err, errlen);
		if (f->match[n - 1] == ':' ? !strncmp(spec, f->match, n) : !strcmp(spec, f->match))
			return f->parse(spec, spec + n, p, err, errlen);
	}
	return -EINVAL; /* not reached: the last form takes anything */
}

void cb_sizes_free(struct cb_size_profile *p)
{
	free(p->lens);
	free(p->cdf);
	p->lens = NULL;
	p->cdf = NULL;
	p->n = 0;
}

/* --- the draw --------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna): fast, and its 256-bit state never repeats
 * within any run length that matters here. */
static uint64_t xoshiro_next(uint64_t s[4])
{
	uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

void cb_size_draw_init(struct cb_size_draw *d, const struct cb_size_profile *p, uint64_t seed)
{
	uint64_t x = seed;

	d->p = p;
	d->next = 0;
	for (int i = 0; i < 4; i++)
		d->s[i] = splitmix64(&x);
}

unsigned int cb_size_next(struct cb_size_draw *d)
{
	const struct cb_size_profile *p = d->p;
	uint64_t r;
	double u;
	unsigned int lo, hi;

	switch (p->kind) {
	case CB_SIZES_CYCLE:
		lo = p->lens[d->next];
		d->next = d->next + 1 == p->n ? 0 : d->next + 1;
		return lo;
	case CB_SIZES_UNIFORM:
		r = xoshiro_next(d->s);
		/* Multiply-shift maps 64 random bits onto the range without the
		 * bias of a modulo worth speaking of (range <= 9k). */
		return p->min_len +
		       (unsigned int)(((unsigned __int128)r * (p->max_len - p->min_len + 1)) >> 64);
	case CB_SIZES_WEIGHTED:
	default:
		u = (double)(xoshiro_next(d->s) >> 11) * 0x1.0p-53; /* [0, 1) */
		lo = 0;
		hi = p->n - 1;
		while (lo < hi) { /* the first i with u < cdf[i] */
			unsigned int mid = (lo + hi) / 2;

			if (u < p->cdf[mid])
				hi = mid;
			else
				lo = mid + 1;
		}
		return p->lens[lo];
	}
}
