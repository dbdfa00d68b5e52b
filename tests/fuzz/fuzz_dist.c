/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: --size dist:FILE.csv. Either a profile whose weights
 * are finite and sum to one, or one error line naming the file. */
#include <assert.h>
#include <math.h>

#include "fuzz_common.h"
#include "sizes.h"
#include "stamp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char spec[96], err[512];
	struct cb_size_profile p;
	struct cb_size_draw d;
	int rc;

	snprintf(spec, sizeof(spec), "dist:%s", path);
	err[0] = 0;
	rc = cb_sizes_parse(spec, &p, err, sizeof(err));
	if (rc) {
		assert(err[0] && !strchr(err, '\n') && strstr(err, path));
		for (const char *c = err; *c; c++) /* one printable line: no CR, ESC, ... */
			assert((unsigned char)*c >= 0x20 && *c != 0x7f);
		return 0;
	}
	assert(p.kind == CB_SIZES_WEIGHTED && p.n > 0);
	assert(isfinite(p.mean_len) && p.mean_len >= CB_FRAME_MIN && p.mean_len <= CB_FRAME_MAX);
	for (unsigned int i = 0; i < p.n; i++) {
		assert(p.lens[i] >= CB_FRAME_MIN && p.lens[i] <= CB_FRAME_MAX);
		assert(p.cdf[i] >= 0 && p.cdf[i] <= 1 && (i == 0 || p.cdf[i] >= p.cdf[i - 1]));
	}
	cb_size_draw_init(&d, &p, 1);
	for (int i = 0; i < 64; i++) {
		unsigned int len = cb_size_next(&d);

		assert(len >= p.min_len && len <= p.max_len);
	}
	cb_sizes_free(&p);
	return 0;
}
