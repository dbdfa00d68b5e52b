/* SPDX-License-Identifier: MIT */
/*
 * What the interference witness (src/bpf/witness.bpf.c, src/tools/witness.c)
 * counts, shared by the BPF program and the program that reads its maps.
 * Plain C that clang -target bpf accepts: no libc, no kernel-only types.
 */
#ifndef CAPBENCH_WITNESS_H
#define CAPBENCH_WITNESS_H

/* Run time of each CPU by whose it was, since the program was loaded: one
 * value per CPU (a BPF_MAP_TYPE_PERCPU_ARRAY of one entry), each written only
 * on its own CPU (sched_switch runs with interrupts off, the canary in a hard
 * interrupt), so no atomics are needed. */
struct cb_witness_cpu {
	unsigned long long trial_ns;   /* the trial's tasks: the run's cgroup, the pids it named */
	unsigned long long others_ns;  /* every other task, idle excluded */
	unsigned long long idle_ns;    /* the idle task (pid 0) */
	unsigned long long stopped_ns; /* the canary's late time: the CPU did not run */
	unsigned long long canary_fires;
	unsigned long long last_charge_ns; /* run time is charged up to here; 0: not yet */
	unsigned long long canary_last_ns; /* the canary's latest firing; 0: none yet */
	unsigned long long slice_start_ns; /* when the running task was switched in */
	/* The longest time one other task ran at a stretch, and its name, in two
	 * slots by the snapshot interval (epoch & 1): the slot of the interval
	 * before stays whole while the next one fills. */
	unsigned long long others_longest_ns[2];
	char others_longest_comm[2][16];
	unsigned int longest_epoch; /* the interval the slot epoch & 1 holds */
	unsigned int pad;
};

/* The others' run time on one CPU by their thread's name, per snapshot
 * interval (`epoch`: the snapshot the time belongs to). */
struct cb_witness_name {
	unsigned int cpu;
	unsigned int epoch;
	char comm[16];
};

/* A stop of one CPU: its canary timer fired `stop_ns` later than its period
 * said (the CPU took no timer interrupt meanwhile), ending at `end_ns`
 * (CLOCK_MONOTONIC). */
struct cb_witness_stop {
	unsigned long long end_ns;
	unsigned long long stop_ns;
	unsigned int cpu;
	unsigned int pad;
};

/* The most names kept per interval (the map's size); what does not fit is
 * still in others_ns. */
#define CB_WITNESS_NAMES 8192
/* The most pids a snapshot may name as the trial's (kernel threads). */
#define CB_WITNESS_PIDS 64

#endif
