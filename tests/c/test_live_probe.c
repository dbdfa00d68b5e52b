/* SPDX-License-Identifier: MIT */
/* Unit tests: the xdp engine's live-frames probe (src/gen/live_probe.c). A
 * kernel without live frames cannot be made here, so the errno mapping is
 * tested on its own; as root the probe also runs on this kernel. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmocka.h>

#include "live_probe.h"

static void test_lacking_kernels_get_the_one_line(void **state)
{
	/* EINVAL: before 5.18 (no batch_size, no flag); EOPNOTSUPP and the
	 * kernel's internal ENOTSUPP (524): no test-run support. */
	const int errs[] = { -EINVAL, -EOPNOTSUPP, -524 };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *line = gen_live_frames_refusal(errs[i]);

		if (!line)
			fail_msg("errno %d gives no refusal line", -errs[i]);
		assert_non_null(strstr(line, "cannot run XDP programs on live frames"));
		assert_non_null(strstr(line, "BPF_F_TEST_XDP_LIVE_FRAMES"));
		assert_non_null(strstr(line, "Linux >= 5.18"));
		assert_non_null(strstr(line, "use --engine xdploop or afpacket"));
		assert_null(strchr(line, '\n'));
	}
}

static void test_a_kernel_that_forbids_them_gets_its_own_line(void **state)
{
	/* EPERM after the probe's program loaded: the kernel's policy, not
	 * the process's privileges and not its version. */
	const char *line = gen_live_frames_refusal(-EPERM);

	assert_non_null(line);
	assert_non_null(strstr(line, "refuses to run XDP programs on live frames"));
	assert_non_null(strstr(line, "Operation not permitted"));
	assert_non_null(strstr(line, "use --engine xdploop or afpacket"));
	assert_null(strstr(line, "Linux >= 5.18"));
	assert_null(strchr(line, '\n'));
}

static void test_other_errors_are_not_blamed_on_the_kernel(void **state)
{
	const int errs[] = { 0, -EACCES, -ENOMEM, -EINTR, -E2BIG, -EFAULT, -ENODEV };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++)
		if (gen_live_frames_refusal(errs[i]))
			fail_msg("errno %d is taken for a kernel without live frames", -errs[i]);
}

/* Whether `uname -r` is at least major.minor. */
static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return -1;
	return ma > major || (ma == major && mi >= minor);
}

static void test_probe_on_this_kernel(void **state)
{
	static uint8_t frame[9014]; /* a 9018 B jumbo frame less its FCS */
	int newer = kernel_at_least(5, 18);

	if (geteuid() != 0 || newer < 0) {
		skip();
		return;
	}
	/* 5.18 and later run it (and drop the frame); older ones refuse. A
	 * kernel that forbids live frames (EPERM, as a sandbox's may) refuses
	 * every length alike. */
	int forbidden = gen_probe_live_frames(frame, 60) == -EPERM;

	if (forbidden) {
		assert_int_equal(gen_probe_live_frames(frame, 1514), -EPERM);
		assert_int_equal(gen_probe_live_frames(frame, sizeof(frame)), -EPERM);
		return;
	}
	assert_int_equal(gen_probe_live_frames(frame, 60), newer ? 0 : -EINVAL);
	assert_int_equal(gen_probe_live_frames(frame, 1514), newer ? 0 : -EINVAL);
	/* A live frame gets one page: a jumbo frame is refused either way
	 * (on a kernel with live frames, with a line about its length). */
	assert_int_equal(gen_probe_live_frames(frame, sizeof(frame)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lacking_kernels_get_the_one_line),
		cmocka_unit_test(test_a_kernel_that_forbids_them_gets_its_own_line),
		cmocka_unit_test(test_other_errors_are_not_blamed_on_the_kernel),
		cmocka_unit_test(test_probe_on_this_kernel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
