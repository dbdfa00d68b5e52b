/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: capbench-cap's options, argv (NUL-separated) to a
 * checked configuration, as `capbench-cap --check ...` reads them: nothing
 * is captured. Bad input ends in exit(2) (caught, see fuzz_common.h). */
#include <assert.h>

#include "cap.h"
#include "fuzz_common.h"
#include "util.h"

static struct cap_cfg cfg;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fixed[] = { "--check", NULL };
	char *argv[FUZZ_MAX_ARGS + 1], *buf;
	int argc = fuzz_argv("capbench-cap", fixed, data, size, argv, &buf), check = 0;

	FUZZ_TRY
		const struct cap_backend *be = cap_configure(argc, argv, &cfg, &check);

		assert(be && check);
		assert(cfg.workers >= 1 && cfg.workers <= CAP_MAX_WORKERS);
		assert(cfg.duration_s <= CB_SECONDS_MAX);
		assert(cfg.count <= CB_COUNT_MAX);
		assert(cfg.interval_s >= CB_INTERVAL_MIN_S && cfg.interval_s <= CB_INTERVAL_MAX_S);
		for (unsigned int i = 0; i < cfg.workers; i++)
			assert(cfg.worker_cpus[i] >= -1);
	FUZZ_END
	/* Bad input is exit status 2 (--help 0), never a runtime failure (1). */
	assert(fuzz_exit_status == 0 || fuzz_exit_status == 2);
	free(buf);
	return 0;
}
