/* SPDX-License-Identifier: MIT */
/*
 * What capbench's XDP programs count, shared by the BPF programs
 * (the .bpf.c files in src/bpf) and the programs that read their maps. Plain C that
 * clang -target bpf accepts: no libc, no kernel-only types.
 *
 * Every counter lives in a BPF_MAP_TYPE_PERCPU_ARRAY, so concurrent receive
 * queues never contend on a cache line; user space sums over the CPUs.
 */
#ifndef CAPBENCH_XDP_COUNTS_H
#define CAPBENCH_XDP_COUNTS_H

struct cb_xdp_counts {
	unsigned long long packets;        /* every frame the program saw */
	unsigned long long bytes;          /* their length (no FCS) */
	unsigned long long capbench;       /* of those, capbench frames (stamp.h) */
	unsigned long long not_redirected; /* afxdp: no socket on the frame's queue, passed on */
	unsigned long long trailer;        /* trailer frames (stamp.h): not capbench frames */
};

/* The AF_XDP redirect program's XSKMAP (xdp_xsk.bpf.c): one slot per receive
 * queue, 0..CB_XSK_SLOTS - 1 (capbench-cap's --queue). The afxdp backend
 * shrinks it to the queues it binds before loading; the dpdk backend's
 * net_af_xdp loads the object as it is. A slot is one pointer. */
#define CB_XSK_SLOTS 4096

/* The tap (xdp_count.bpf.c, cb_tap): the most interfaces one frame is cloned to. */
#define CB_TAP_MAX_TARGETS 64

/* The receive ring (--rx-mode cpumap, xdp_count.bpf.c): a cpumap entry's queue,
 * whose overflow the kernel reports only in tracepoints. Frames counted per
 * CPU, as the counters above. */
struct cb_ring_counts {
	unsigned long long enqueued;      /* xdp_cpumap_enqueue: frames offered to the queue */
	unsigned long long drops;         /* of those, found the queue full (ptr_ring_produce failed) */
	unsigned long long kthread_drops; /* xdp_cpumap_kthread: taken from the queue, not handed on */
};

/* kernel/bpf/cpumap.c cpu_map_update_elem: the largest qsize it takes. */
#define CB_RX_RING_MAX 16384

/* The ceiling program's per-stream view (stream id = one byte, stamp.h). */
#define CB_XDP_STREAMS 256

struct cb_xdp_stream {
	unsigned long long frames; /* capbench frames of this stream, duplicates included */
	unsigned long long next;   /* highest sequence number seen + 1; 0 = none */
};

#endif
