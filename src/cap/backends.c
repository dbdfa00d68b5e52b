/* SPDX-License-Identifier: MIT */
/*
 * The registry of capture backends: one line each, in the order `capbench
 * backends` and --describe list them. A backend is declared whole in its own
 * file (src/cap/backend_NAME.c, defining cap_backend_NAME); this line and
 * its file's line in meson.build are all that adding one takes.
 */
#include <string.h>

#include "cap.h"

#define CAP_BACKENDS(X) \
	X(pcap)         \
	X(raw)          \
	X(afp_v2)       \
	X(afp_v3)       \
	X(fanout)       \
	X(afxdp)        \
	X(xdp)          \
	X(dpdk)         \
	CAP_TEST_BACKENDS(X)

/* The test build of tests/c/test_cap_dummy.c adds its backend the same way
 * (-DCAP_TEST_BACKEND=dummy); no other build has it. */
#ifdef CAP_TEST_BACKEND
#define CAP_TEST_BACKENDS(X) CAP_EXPANDED(X, CAP_TEST_BACKEND)
#define CAP_EXPANDED(X, name) X(name)
#else
#define CAP_TEST_BACKENDS(X)
#endif

#define DECLARE(name) extern const struct cap_backend cap_backend_##name;
#define ENTRY(name) &cap_backend_##name,

CAP_BACKENDS(DECLARE)

const struct cap_backend *const cap_backends[] = {
	CAP_BACKENDS(ENTRY)
	NULL,
};

const struct cap_backend *cap_backend_find(const char *name)
{
	for (int i = 0; cap_backends[i]; i++)
		if (!strcmp(cap_backends[i]->name, name))
			return cap_backends[i];
	return NULL;
}
