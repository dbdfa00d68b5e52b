/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: the capture readers, trace: (the length profile) and
 * --replay (the frames kept in memory), on one pcap or pcapng file. Each
 * either reads it or refuses it with one line; whatever it accepted must be
 * self-consistent. */
#include <assert.h>

#include "fuzz_common.h"
#include "replay.h"
#include "sizes.h"
#include "stamp.h"

#define MTU_BUF_LEN (9000 + 14)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char spec[96], err[512];
	struct cb_size_profile p;
	struct gen_replay r;
	int rc;

	snprintf(spec, sizeof(spec), "trace:%s", path);
	err[0] = 0;
	rc = cb_sizes_parse(spec, &p, err, sizeof(err));
	if (rc == 0) {
		assert(p.n > 0 && p.min_len >= CB_FRAME_MIN && p.max_len <= CB_FRAME_MAX);
		assert(p.cdf[p.n - 1] == 1.0);
		cb_sizes_free(&p);
	} else {
		assert(err[0] && !strchr(err, '\n'));
	}

	err[0] = 0;
	rc = gen_replay_load(path, MTU_BUF_LEN, &r, err, sizeof(err));
	if (rc == 0) {
		uint64_t end = 0;

		assert(r.n > 0);
		for (uint32_t i = 0; i < r.n; i++) {
			assert(r.len[i] >= CB_FRAME_MIN - CB_FCS_LEN && r.len[i] <= MTU_BUF_LEN);
			assert(r.off[i] == end);
			end += r.len[i];
		}
		/* Touch every byte kept: ASan sees an overrun. */
		volatile uint8_t sum = 0;
		for (uint64_t i = 0; i < end; i++)
			sum += r.buf[i];
		(void)sum;
		gen_replay_free(&r);
	} else {
		assert(err[0] && !strchr(err, '\n'));
	}
	return 0;
}
