/* SPDX-License-Identifier: MIT */
/*
 * Does this kernel run XDP programs on live frames (BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES, Linux >= 5.18)? The xdp engine asks once
 * when it opens, so a kernel without it is bad input (exit status 2, one
 * line) found before anything is sent, not an error of the sending thread.
 */
#ifndef CAPBENCH_LIVE_PROBE_H
#define CAPBENCH_LIVE_PROBE_H

#include <stdint.h>

/* The line to print (without the program name) when BPF_PROG_RUN with live
 * frames failed with -err because the kernel lacks the feature or forbids
 * it (-EPERM once the probe's program loaded), or NULL when -err means
 * something else. */
const char *gen_live_frames_refusal(int err);

/* Run a program that only returns XDP_DROP on `frame` (len bytes, without
 * FCS) in live-frames mode: nothing reaches any interface, and the
 * generator's own program and counters are not involved. Returns 0;
 * -EINVAL after printing one line (the kernel lacks live frames, or the
 * frame is too long for one); or another -errno after printing one line. */
int gen_probe_live_frames(const uint8_t *frame, uint32_t len);

#endif
