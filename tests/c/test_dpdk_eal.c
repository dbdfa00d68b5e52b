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
	assert_int_equal(cap_dpdk_eal_args(&cfg, "net_af_xdp0,iface=cbx1c", 42, &a, why, sizeof(why)), 0);
	assert_string_equal(joined(), "capbench-cap --no-huge --no-shconf --no-telemetry -l 1,0 -m 256 "
			    "--file-prefix capbench-42 --no-pci --vdev net_af_xdp0,iface=cbx1c "
			    "--log-level=8 -n 4");
}

static void test_eal_args_of_a_pci_port(void **state)
{
	configure("eth1", 0, 1);
	cfg.cpu = 3;
	assert_int_equal(cap_dpdk_eal_args(&cfg, "0000:01:00.0", 7, &a, why, sizeof(why)), 0);
	assert_string_equal(joined(), "capbench-cap --no-huge --no-shconf --no-telemetry -l 3 -m 256 "
			    "--file-prefix capbench-7 -a 0000:01:00.0");
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
	assert_int_equal(cap_dpdk_eal_args(&cfg, "net_null0", 1, &a, why, sizeof(why)), 0);
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
	assert_int_equal(cap_dpdk_eal_args(&cfg, "net_null0", 1, &a, why, sizeof(why)), -E2BIG);
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
		cmocka_unit_test(test_eal_args_unpinned_take_an_allowed_cpu),
		cmocka_unit_test(test_too_many_eal_words_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
