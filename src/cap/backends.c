/* SPDX-License-Identifier: MIT */
/* The registry of capture backends, in the order `capbench backends` lists them. */
#include <string.h>

#include "cap.h"

const struct cap_backend *const cap_backends[] = {
	&cap_backend_pcap,
	&cap_backend_raw,
	&cap_backend_afp_v2,
	&cap_backend_afp_v3,
	&cap_backend_fanout,
	&cap_backend_afxdp,
	&cap_backend_xdp,
	NULL,
};

const struct cap_backend *cap_backend_find(const char *name)
{
	for (int i = 0; cap_backends[i]; i++)
		if (!strcmp(cap_backends[i]->name, name))
			return cap_backends[i];
	return NULL;
}
