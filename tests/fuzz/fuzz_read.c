/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: capbench-cap --read FILE --interval 10ms, the offline
 * decode (src/cap/cap_read.c), on one pcap or pcapng file. It either prints
 * interval lines and one summary line, each valid JSON, counting every
 * record of the file, or refuses the file with one line (exit status 2)
 * and no summary.
 * Never exit status 1: no --group-size here, whose group array a damaged
 * sequence number can make longer than a JSON line holds (rx_stats.c). */
#include <assert.h>

#include "../c/json_check.h"
#include "cap.h"
#include "fuzz_common.h"

static struct cap_cfg cfg;

static void configure(const char *path)
{
	char *argv[] = { "capbench-cap", "--read", (char *)path, "--interval", "10ms", NULL };
	int check;

	cb_set_progname("capbench-cap");
	optind = 0;
	assert(!cap_configure(5, argv, &cfg, &check) && !check);
}

/* The value of "key": in the line, which must be there. */
static unsigned long long field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	assert(p);
	return strtoull(p + strlen(key), NULL, 10);
}

static void check_output(char *out, size_t len)
{
	char *line = out, *nl, *last = NULL;

	assert(len && out[len - 1] == '\n');
	for (; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		assert(json_valid(line));
		last = line;
	}
	assert(last && strstr(last, "{\"type\":\"summary\","));
	assert(field(last, "\"file_frames\":") == field(last, "\"packets\":"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file(data, size);
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	int status;

	if (!cfg.read_path)
		configure(path); /* the memfd's path is the same for every input */
	f = open_memstream(&out, &len);
	assert(f);
	status = cap_read_file(&cfg, f);
	fclose(f);
	assert(status == CB_EXIT_OK || status == CB_EXIT_USAGE);
	if (status == CB_EXIT_OK)
		check_output(out, len);
	else /* interval lines of the records before a damaged one, never a summary */
		assert(!out || !strstr(out, "\"summary\""));
	free(out);
	return 0;
}
