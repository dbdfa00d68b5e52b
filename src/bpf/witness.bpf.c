// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The interference witness (src/tools/witness.c loads it). Each CPU's time is
 * charged to the task that ran it, in two places:
 *
 * cb_switch (tp_btf/sched_switch): at each context switch, the time since the
 * last charge goes to the task switched out. The tracepoint fires in
 * __schedule() before the switch, so `current` is still that task.
 *
 * cb_canary (a software cpu-clock perf event on each CPU of the run, firing
 * every period_ns): the timer is an hrtimer that fires in hard interrupt
 * context whatever task runs, idle included, so `current` is the task it
 * interrupted. It charges the time since the last charge to that task too
 * (a task that runs for seconds without a switch, a real-time hog, is seen
 * within a period), and it is the CPU's canary: a firing later than one
 * period after the one before means the CPU took no interrupt meanwhile, the
 * hypervisor did not run the vCPU (or, rarely, the kernel ran with interrupts
 * off). That late time is the CPU's stop: charged to nobody (stopped_ns), and
 * each stop of at least stop_min_ns goes to the ring buffer.
 *
 * Whose: the trial's when `current` is in capbench's run group (every program
 * a trial runs is born in it, testbed/cgroups.py;
 * bpf_current_task_under_cgroup) or its thread group is one of `trial_pids`
 * (capbench itself, the trial's kernel threads: its NAPI or cpumap thread);
 * idle for pid 0; else others', also by thread name per snapshot interval.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "witness.h"

struct task_struct;

const volatile unsigned long long period_ns = 250000;
const volatile unsigned long long stop_min_ns = 250000;
/* The snapshot interval the names and the longest stretch are charged to:
 * user space raises it at each snapshot. */
volatile unsigned int epoch;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cb_witness_cpu);
} per_cpu SEC(".maps");

/* capbench's run group (entry 0); empty: no cgroup holds the trial's programs. */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} run_group SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CB_WITNESS_PIDS);
	__type(key, __u32);
	__type(value, __u8);
} trial_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CB_WITNESS_NAMES);
	__type(key, struct cb_witness_name);
	__type(value, __u64);
} others_by_name SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} stops SEC(".maps");

enum whose { IDLE, TRIAL, OTHERS };

static __always_inline enum whose current_whose(void)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if ((__u32)id == 0)
		return IDLE;
	if (bpf_map_lookup_elem(&trial_pids, &tgid) || bpf_current_task_under_cgroup(&run_group, 0) == 1)
		return TRIAL;
	return OTHERS;
}

/* The slot of this interval's longest stretch, emptied at the interval's first use. */
static __always_inline unsigned int longest_slot(struct cb_witness_cpu *c, unsigned int e)
{
	unsigned int slot = e & 1;

	if (c->longest_epoch != e) {
		c->longest_epoch = e;
		c->others_longest_ns[slot] = 0;
	}
	return slot;
}

/* The time since the last charge, less `stopped`, to the current task. */
static __always_inline void charge(struct cb_witness_cpu *c, __u64 now, __u64 stopped, int switching)
{
	__u64 ran = c->last_charge_ns && now > c->last_charge_ns ? now - c->last_charge_ns : 0;
	unsigned int e = epoch, slot = longest_slot(c, e);
	enum whose who = current_whose();

	c->last_charge_ns = now;
	ran = ran > stopped ? ran - stopped : 0;
	if (who == IDLE) {
		c->idle_ns += ran;
	} else if (who == TRIAL) {
		c->trial_ns += ran;
	} else {
		struct cb_witness_name key = { .cpu = bpf_get_smp_processor_id(), .epoch = e };
		__u64 *ns, stretch = c->slice_start_ns && now > c->slice_start_ns ? now - c->slice_start_ns : 0;

		c->others_ns += ran;
		if (stretch > c->others_longest_ns[slot]) {
			c->others_longest_ns[slot] = stretch;
			bpf_get_current_comm(c->others_longest_comm[slot], sizeof(c->others_longest_comm[slot]));
		}
		bpf_get_current_comm(key.comm, sizeof(key.comm));
		ns = bpf_map_lookup_elem(&others_by_name, &key);
		if (ns)
			*ns += ran; /* a key of this CPU's: only this CPU writes it */
		else if (ran)
			bpf_map_update_elem(&others_by_name, &key, &ran, BPF_NOEXIST);
	}
	if (switching)
		c->slice_start_ns = now;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(cb_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 zero = 0;
	struct cb_witness_cpu *c = bpf_map_lookup_elem(&per_cpu, &zero);

	if (c)
		charge(c, bpf_ktime_get_ns(), 0, 1);
	return 0;
}

SEC("perf_event")
int cb_canary(struct bpf_perf_event_data *ctx)
{
	__u32 zero = 0;
	struct cb_witness_cpu *c = bpf_map_lookup_elem(&per_cpu, &zero);
	__u64 now = bpf_ktime_get_ns(), late;

	if (!c)
		return 0;
	late = c->canary_last_ns && now - c->canary_last_ns > period_ns ? now - c->canary_last_ns - period_ns : 0;
	c->canary_last_ns = now;
	c->canary_fires++;
	/* Lateness below stop_min_ns is the timer's own jitter (microseconds), time the task ran. */
	if (late < stop_min_ns)
		late = 0;
	/* The stop is charged to nobody: of the time since the last charge, the part it can hold (a
	 * switch after the vCPU resumed, before the timer's interrupt, charged the rest already). */
	charge(c, now, late < now - c->last_charge_ns ? late : now - c->last_charge_ns, 0);
	c->stopped_ns += late;
	if (late) {
		struct cb_witness_stop *s = bpf_ringbuf_reserve(&stops, sizeof(*s), 0);

		if (s) {
			s->end_ns = now;
			s->stop_ns = late;
			s->cpu = bpf_get_smp_processor_id();
			s->pad = 0;
			bpf_ringbuf_submit(s, 0);
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
