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

/* A layer no other backend has: capbench must carry it to the record, the
 * tables and the report without knowing it (tests/py/test_account_rows.py). */
static const struct cap_account_row dummy_account[] = {
	{ "dummy tray", "the dummy's tray_spills",
	  "the dummy's tray had no room: a layer only this backend has" },
	{ .layer = NULL }, /* the end */
};

const struct cap_backend cap_backend_dummy = {
	.name = "dummy",
	.describe = "a test backend that captures nothing",
	.seed = "none: it proves a backend is declared in one file",
	.options = dummy_options,
	.caps = { .kernel_stats = "packet_statistics", .clock = CAP_CLOCK_KERNEL,
		  .needs = { "packet_socket" } },
	.account = dummy_account,
	.open = dummy_open,
};
