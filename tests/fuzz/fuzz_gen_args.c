/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: capbench-gen's options, argv (NUL-separated) to a
 * checked plan, as `capbench-gen --check ...` reads them: nothing is sent.
 * Bad input ends in exit(2) (caught, see fuzz_common.h); a plan accepted
 * must keep its bounds, and its check line is printed (to /dev/null). */
#include <assert.h>
#include <math.h>

#include "fuzz_common.h"
#include "gen.h"
#include "util.h"

static struct gen_plan plan;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const fixed[] = { "--check", NULL };
	char *argv[FUZZ_MAX_ARGS + 1], *buf;
	int argc = fuzz_argv("capbench-gen", fixed, data, size, argv, &buf);

	memset(&plan, 0, sizeof(plan));
	FUZZ_TRY
		gen_configure(argc, argv, &plan);
		assert(plan.n >= 1 && plan.n <= GEN_MAX_THREADS);
		assert(plan.total.duration_s <= CB_SECONDS_MAX);
		assert(plan.total.count <= CB_COUNT_MAX);
		assert(plan.total.interval_s >= CB_INTERVAL_MIN_S &&
		       plan.total.interval_s <= CB_INTERVAL_MAX_S);
		if (plan.total.sched.paced && plan.total.count && plan.total.pps > 0)
			assert((double)plan.total.count / plan.total.pps <= CB_SECONDS_MAX * 1.001 ||
			       plan.total.pace.group_size);
		gen_print_check(&plan);
	FUZZ_END
	/* Bad input is exit status 2 (--help 0), never a runtime failure (1). */
	assert(fuzz_exit_status == 0 || fuzz_exit_status == 2);
	fflush(stdout);
	gen_plan_free(&plan);
	free(buf);
	return 0;
}
