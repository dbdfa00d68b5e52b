/* SPDX-License-Identifier: MIT */
/*
 * Frame-length profiles: what `--size` accepts, and a reproducible draw.
 *
 *   64                  one length
 *   64,594,1518         a list, cycled in order
 *   rfc2544             64,128,256,512,1024,1280,1518 cycled (RFC 2544 section 9.1)
 *   seed                the 13 lengths of seed 000, cycled
 *   imix:seed           57 % 64 B, 7 % 570 B, 16 % 594 B, 20 % 1518 B (seed 000)
 *   imix:simple         7:4:1 of 64, 594, 1518 B ("simple IMIX")
 *   random:MIN-MAX      uniform over MIN..MAX
 *   dist:FILE.csv       "length,weight" rows (a header and # comments allowed)
 *   trace:FILE.pcap     the frame-length distribution of a capture
 *
 * Lengths count the 4 B FCS, as RFC 2544 does. Cycled profiles give the same
 * sequence every time; drawn ones (imix, random, dist, trace) use xoshiro256**
 * seeded from --seed through splitmix64, so a rerun with the same seed offers
 * the same frames.
 */
#ifndef CAPBENCH_SIZES_H
#define CAPBENCH_SIZES_H

#include <stddef.h>
#include <stdint.h>

/* The largest dist: file read: 16 MiB, room for a row per frame of a
 * million-frame capture; any sensible distribution is a few kilobytes. */
#define CB_DIST_FILE_MAX (16ull << 20)

enum cb_size_kind {
	CB_SIZES_CYCLE,    /* lens[] in order, again and again */
	CB_SIZES_WEIGHTED, /* lens[i] with probability weight[i] / total */
	CB_SIZES_UNIFORM,  /* min_len..max_len, each equally likely */
};

struct cb_size_profile {
	enum cb_size_kind kind;
	unsigned int n;          /* entries of lens[] (and cdf[]) */
	unsigned int *lens;
	double *cdf;             /* WEIGHTED: cumulative weights, cdf[n-1] = 1 */
	unsigned int min_len, max_len;
	double mean_len;         /* expected frame length */
};

/* Parse a profile. Returns 0, or -EINVAL / -ENOENT / -ERANGE with one line in
 * err naming the value (or the file and line) and the fix. Lengths are
 * checked against CB_FRAME_MIN..CB_FRAME_MAX only; the caller checks them
 * against its interface's MTU. */
int cb_sizes_parse(const char *spec, struct cb_size_profile *p, char *err, size_t errlen);
void cb_sizes_free(struct cb_size_profile *p);

/* The profiles --size takes, each with the forms it is written in (for
 * --describe and --help); cb_sizes_parse tries them in this order. `match`:
 * the exact spec, or a prefix ending in ':'; NULL for the last (lists),
 * which takes anything else. Ends with a NULL name. */
struct cb_size_form {
	const char *name;
	const char *forms[4];
	const char *match;
	int (*parse)(const char *spec, const char *rest, struct cb_size_profile *p, char *err,
		     size_t errlen);
	const char *help;
	/* The lengths of a fixed list (rfc2544, seed); NULL for the others. */
	const unsigned int *lengths;
	unsigned int n_lengths;
};
extern const struct cb_size_form cb_size_forms[];

/* Build a CYCLE profile of these n lengths (copied). */
int cb_sizes_cycle(struct cb_size_profile *p, const unsigned int *lens, unsigned int n);

/* Build a WEIGHTED profile from (length, weight) pairs; merges nothing,
 * weights must be >= 0 with a positive sum. Used by the file readers. */
int cb_sizes_weighted(struct cb_size_profile *p, const unsigned int *lens,
		      const double *weights, unsigned int n);

/* The trace: reader (sizes_trace.c, libpcap). */
int cb_sizes_from_pcap(const char *path, struct cb_size_profile *p, char *err, size_t errlen);

struct cb_size_draw {
	const struct cb_size_profile *p;
	uint64_t s[4];     /* xoshiro256** state */
	uint64_t next;     /* CYCLE: index of the next length */
};

void cb_size_draw_init(struct cb_size_draw *d, const struct cb_size_profile *p, uint64_t seed);
unsigned int cb_size_next(struct cb_size_draw *d);

#endif
