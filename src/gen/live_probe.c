/* SPDX-License-Identifier: MIT */
#include "live_probe.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "stamp.h"
#include "util.h"

/* The kernel's own "not supported" (include/linux/errno.h), which BPF calls
 * may pass on to user space; libc has no name for it. */
#define KERNEL_ENOTSUPP 524

const char *gen_live_frames_refusal(int err)
{
	/*
	 * Before 5.18 the attribute block of BPF_PROG_RUN ends before
	 * batch_size, so a non-zero batch_size (or the flag itself) is
	 * refused with EINVAL; a kernel built without the test-run support
	 * answers EOPNOTSUPP or its internal ENOTSUPP.
	 */
	switch (err) {
	case -EPERM:
		/* The probe loaded its program, so the process has the
		 * privileges: the kernel itself forbids live frames (a
		 * sandbox's kernel may, while it runs other BPF test runs). */
		return "this kernel refuses to run XDP programs on live frames (BPF_PROG_RUN "
		       "with BPF_F_TEST_XDP_LIVE_FRAMES: Operation not permitted, for every "
		       "process): use --engine xdploop or afpacket";
	case -EINVAL:
	case -EOPNOTSUPP:
	case -KERNEL_ENOTSUPP:
		return "this kernel cannot run XDP programs on live frames "
		       "(BPF_F_TEST_XDP_LIVE_FRAMES, Linux >= 5.18): use --engine xdploop or afpacket";
	default:
		return NULL;
	}
}

/* r0 = XDP_DROP; exit: a frame it sees goes straight back to the page pool. */
static int load_drop_program(void)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_DROP },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "cb_live_probe", "Dual BSD/GPL", insns,
			       sizeof(insns) / sizeof(insns[0]), NULL);

	return fd < 0 ? -errno : fd;
}

/* Run program `fd` once on the first `len` bytes of `frame` as a live frame.
 * batch_size is set on purpose: a kernel that predates live frames has no
 * such field and refuses it. Returns 0 or -errno. */
static int run_once(int fd, const uint8_t *frame, uint32_t len)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts,
		.data_in = frame,
		.data_size_in = len,
		.repeat = 1,
		.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
		.batch_size = 1);

	return bpf_prog_test_run_opts(fd, &opts);
}

/*
 * Two runs: the frame's first CB_FRAME_MIN - FCS bytes, which any kernel
 * with live frames takes, tell whether it has them; then the whole frame,
 * because the kernel gives each live frame one page and refuses a longer
 * one (jumbo frames) with the same EINVAL.
 */
int gen_probe_live_frames(const uint8_t *frame, uint32_t len)
{
	uint32_t small = len < CB_FRAME_MIN - CB_FCS_LEN ? len : CB_FRAME_MIN - CB_FCS_LEN;
	int fd = load_drop_program(), err, err_whole = 0;
	const char *refusal;

	if (fd < 0) {
		/* Out of memory is a failure; otherwise the fix is the user's:
		 * privileges, or the other engine. */
		if (fd == -ENOMEM) {
			fprintf(stderr, "capbench-gen: cannot load an XDP program: %s\n", strerror(-fd));
			return fd;
		}
		return cb_user_fault(fd, "cannot load an XDP program (%s): run as root on a kernel "
				     "with BPF, or use --engine afpacket", strerror(-fd));
	}
	err = run_once(fd, frame, small);
	if (!err && len > small)
		err_whole = run_once(fd, frame, len);
	close(fd);
	/* A kernel without live frames, a frame longer than their page: the
	 * user's to fix with another engine or size. */
	refusal = gen_live_frames_refusal(err);
	if (refusal)
		return cb_user_fault(err, "%s", refusal);
	if (err_whole == -EINVAL)
		return cb_user_fault(err_whole, "frames of %u B do not fit the one page the kernel "
				     "gives each live frame: use a smaller --size or --engine afpacket",
				     len + CB_FCS_LEN);
	err = err ? err : err_whole;
	if (err)
		fprintf(stderr, "capbench-gen: BPF_PROG_RUN with live frames failed: %s\n",
			strerror(-err));
	return err;
}
