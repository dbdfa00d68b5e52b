/* SPDX-License-Identifier: MIT */
/* Unit tests of src/cap/dpdk_eal.c: the dpdk backend's port devargs and EAL
 * command line, built from capbench-cap's configuration (no DPDK needed). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "dpdk_eal.h"

static struct cap_cfg cfg;
static char out[512], why[256];
static struct cap_dpdk_args a;

/* A configuration as cap_config.c leaves it: --iface IF, queues first..first+n-1. */
static void configure(const char *iface, unsigned int first, unsigned int n)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.iface = iface;
	cfg.cpu = -1;
	cfg.n_queues = cfg.workers = n;
	for (unsigned int i = 0; i < n; i++) {
		cfg.queues[i] = first + i;
		cfg.worker_cpus[i] = -1;
	}
	why[0] = '\0';
}

static void test_af_xdp_takes_the_queue_range_and_the_program(void **state)
{
	configure("cbx1c", 2, 2);
	assert_int_equal(cap_dpdk_devargs(&cfg, "/proc/self/fd/4", out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "net_af_xdp0,iface=cbx1c,start_queue=2,queue_count=2,"
			    "xdp_prog=/proc/self/fd/4");
	/* Without a program the driver loads its own. */
	assert_int_equal(cap_dpdk_devargs(&cfg, NULL, out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "net_af_xdp0,iface=cbx1c,start_queue=2,queue_count=2");
}

static void test_af_packet_takes_queues_from_zero_and_the_ring(void **state)
{
	configure("cbx1c", 0, 3);
	cfg.dpdk_driver = CAP_DPDK_AF_PACKET;
	assert_int_equal(cap_dpdk_devargs(&cfg, NULL, out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "net_af_packet0,iface=cbx1c,qpairs=3,framecnt=2048");
	cfg.ring_size = 4096;
	assert_int_equal(cap_dpdk_devargs(&cfg, NULL, out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "net_af_packet0,iface=cbx1c,qpairs=3,framecnt=4096");
	configure("cbx1c", 1, 1);
	cfg.dpdk_driver = CAP_DPDK_AF_PACKET;
	assert_int_equal(cap_dpdk_devargs(&cfg, NULL, out, sizeof(out), why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "--queue: net_af_packet's queues are its sockets, numbered from 0: "
			    "give --queue 0-0");
}

static void test_queues_with_gaps_are_refused(void **state)
{
	configure("cbx1c", 0, 2);
	cfg.queues[1] = 2;
	assert_int_equal(cap_dpdk_devargs(&cfg, NULL, out, sizeof(out), why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "--queue: the net_af_xdp driver takes consecutive receive queues "
			    "(e.g. 0-3), not a list with gaps");
}

static void test_user_devargs_are_taken_as_given(void **state)
{
	configure("cbx1c", 5, 2); /* the queues are the port's own then */
	cfg.dpdk_devargs = "net_pcap0,iface=eth1";
	assert_int_equal(cap_dpdk_devargs(&cfg, "/x", out, sizeof(out), why, sizeof(why)), 0);
	assert_string_equal(out, "net_pcap0,iface=eth1");
}

static void test_pci_addresses(void **state)
{
	assert_true(cap_dpdk_is_pci("0000:01:00.0"));
	assert_true(cap_dpdk_is_pci("01:00.1"));
	assert_true(cap_dpdk_is_pci("0000:af:00.0,rx_low_latency=1"));
	assert_false(cap_dpdk_is_pci("net_af_xdp0,iface=eth0"));
	assert_false(cap_dpdk_is_pci("0000:01:00.0x"));
	assert_false(cap_dpdk_is_pci("01:00"));
	assert_false(cap_dpdk_is_pci(""));
}

static const char *joined(void)
{
	static char s[4096];

	s[0] = '\0';
	for (int i = 0; i < a.argc; i++)
		snprintf(s + strlen(s), sizeof(s) - strlen(s), "%s%s", i ? " " : "", a.argv[i]);
	assert_null(a.argv[a.argc]);
	return s;
}

static void test_eal_args_of_a_virtual_port(void **state)
{
	configure("cbx1c", 0, 2);
	cfg.cpu = 1;
	cfg.worker_cpus[0] = 1;
	cfg.worker_cpus[1] = 0;
	cfg.dpdk_eal = "  --log-level=8\t-n 4 ";
	assert_int_equal(cap_dpdk_eal_args(&cfg, "net_af_xdp0,iface=cbx1c", 42, 0, &a, why, sizeof(why)), 0);
	assert_string_equal(joined(), "capbench-cap --no-huge --no-shconf --no-telemetry -l 1,0 -m 256 "
			    "--file-prefix capbench-42 --no-pci --vdev net_af_xdp0,iface=cbx1c "
			    "--log-level=8 -n 4");
}

static void test_eal_args_of_a_pci_port(void **state)
{
	configure("eth1", 0, 1);
	cfg.cpu = 3;
	assert_int_equal(cap_dpdk_eal_args(&cfg, "0000:01:00.0", 7, 0, &a, why, sizeof(why)), 0);
	assert_string_equal(joined(), "capbench-cap --no-huge --no-shconf --no-telemetry -l 3 -m 256 "
			    "--file-prefix capbench-7 -a 0000:01:00.0");
}

/* With hugepages (a real port, enough free): --in-memory instead. */
static void test_eal_args_with_hugepages(void **state)
{
	configure("eth1", 0, 1);
	cfg.cpu = 3;
	assert_int_equal(cap_dpdk_eal_args(&cfg, "0000:01:00.0", 7, 1, &a, why, sizeof(why)), 0);
	assert_string_equal(joined(), "capbench-cap --in-memory --no-telemetry -l 3 -m 256 "
			    "--file-prefix capbench-7 -a 0000:01:00.0");
}

/* A pool directory as the kernel lays it out, under a scratch directory. */
static void pool(const char *root, const char *size, const char *free_pages)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/hugepages-%s", root, size);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/hugepages-%s/free_hugepages", root, size);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", free_pages);
	fclose(f);
}

static void test_free_hugepages_are_summed_over_the_pools(void **state)
{
	char root[] = "/tmp/capbench-test-huge-XXXXXX", cmd[128];

	assert_non_null(mkdtemp(root));
	assert_int_equal(cap_dpdk_free_huge_mb(root), 0);
	pool(root, "2048kB", "100");
	pool(root, "1048576kB", "1");
	assert_int_equal(cap_dpdk_free_huge_mb(root), 100 * 2 + 1024);
	snprintf(cmd, sizeof(cmd), "rm -r %s", root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(cap_dpdk_free_huge_mb(root), -ENOENT);
}

static void test_hugepages_only_for_a_pci_port_that_has_them(void **state)
{
	char note[512];

	configure("cbx1c", 0, 1);
	/* A virtual device: ordinary pages, nothing said. */
	assert_int_equal(cap_dpdk_use_hugepages(&cfg, 4096, note, sizeof(note)), 0);
	assert_string_equal(note, "");
	cfg.dpdk_devargs = "net_null0"; /* the user's, but no DMA */
	assert_int_equal(cap_dpdk_use_hugepages(&cfg, 0, note, sizeof(note)), 0);
	assert_string_equal(note, "");
	cfg.dpdk_devargs = "0000:01:00.0";
	assert_int_equal(cap_dpdk_use_hugepages(&cfg, 256, note, sizeof(note)), 1);
	assert_string_equal(note, "");
	assert_int_equal(cap_dpdk_use_hugepages(&cfg, 100, note, sizeof(note)), 0);
	assert_string_equal(note, "capbench-cap: note: 100 MiB of hugepages free, EAL needs 256: the port runs "
			    "on 4 KiB pages (--no-huge); for hugepages reserve them, e.g. echo 192 > "
			    "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages");
	assert_int_equal(cap_dpdk_use_hugepages(&cfg, -ENOENT, note, sizeof(note)), 0);
	assert_string_equal(note, "capbench-cap: note: this kernel has no hugepages (/sys/kernel/mm/hugepages): "
			    "the port runs on 4 KiB pages (--no-huge)");
}

/* Unpinned: the first CPU this process may run on. */
static void test_eal_args_unpinned_take_an_allowed_cpu(void **state)
{
	cpu_set_t set;
	int first = -1;

	configure("cbx1c", 0, 1);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &set))
			first = c;
	assert_int_equal(cap_dpdk_eal_args(&cfg, "net_null0", 1, 0, &a, why, sizeof(why)), 0);
	assert_string_equal(a.argv[4], "-l");
	assert_int_equal(atoi(a.argv[5]), first);
}

static void test_too_many_eal_words_are_refused(void **state)
{
	static char many[1024];

	configure("cbx1c", 0, 1);
	for (int i = 0; i < 60; i++)
		strcat(many, "-v ");
	cfg.dpdk_eal = many;
	assert_int_equal(cap_dpdk_eal_args(&cfg, "net_null0", 1, 0, &a, why, sizeof(why)), -E2BIG);
	assert_string_equal(why, "the EAL command line is too long: shorten --eal");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_af_xdp_takes_the_queue_range_and_the_program),
		cmocka_unit_test(test_af_packet_takes_queues_from_zero_and_the_ring),
		cmocka_unit_test(test_queues_with_gaps_are_refused),
		cmocka_unit_test(test_user_devargs_are_taken_as_given),
		cmocka_unit_test(test_pci_addresses),
		cmocka_unit_test(test_eal_args_of_a_virtual_port),
		cmocka_unit_test(test_eal_args_of_a_pci_port),
		cmocka_unit_test(test_eal_args_with_hugepages),
		cmocka_unit_test(test_free_hugepages_are_summed_over_the_pools),
		cmocka_unit_test(test_hugepages_only_for_a_pci_port_that_has_them),
		cmocka_unit_test(test_eal_args_unpinned_take_an_allowed_cpu),
		cmocka_unit_test(test_too_many_eal_words_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
