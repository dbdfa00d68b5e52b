/* SPDX-License-Identifier: MIT */
/*
 * A backend that captures nothing, for the test build of test_cap_dummy.c:
 * it shows that a backend is declared in its own file only. Its one option
 * is --batch (a row of raw's and afxdp's tables too), with a range of its
 * own, so the test sees a shared option parsed with the chosen backend's row.
 */
#include <errno.h>

#include "cap.h"

static int dummy_open(const struct cap_cfg *cfg, void **state)
{
	return -EOPNOTSUPP;
}

static const struct cb_opt dummy_options[] = {
	{ .name = "batch", .type = CB_OPT_COUNT, .arg = "N", .min = 1, .max = 8, .has_default = 1,
	  .def = 4, .help = "frames the dummy pretends to read per call",
	  .fix = "give 1..8 dummy frames", CB_OPT_AT(struct cap_cfg, batch) },
	CB_OPT_END,
};

const struct cap_backend cap_backend_dummy = {
	.name = "dummy",
	.describe = "a test backend that captures nothing",
	.seed = "none: it proves a backend is declared in one file",
	.options = dummy_options,
	.caps = { .kernel_stats = "packet_statistics", .clock = CAP_CLOCK_KERNEL,
		  .needs = { "packet_socket" } },
	.open = dummy_open,
};
