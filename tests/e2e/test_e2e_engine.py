"""The generator's engine on this kernel: `capbench run` without --engine sends with the one the
kernel runs (the xdp engine's BPF_PROG_RUN with live frames; where the kernel refuses them, the
xdploop engine's frames circling a veth loop, else afpacket; said in a note), and every trial records the engine that sent. The other outcome of the same
question is tested where the kernel gives it: a kernel that runs live frames gets xdp and no note;
one that refuses them refuses `--engine xdp` in one line, leaving nothing behind."""

from __future__ import annotations

import json

from e2e_env import (assert_one_line_usage_error, capbench_namespaces, gen_engine, left_behind, run_capbench,
                     xdp_engine_refusal)

RUN = ["run", "--backends", "afp-v3", "--sizes", "64", "--rate", "20kpps", "--duration", "0.5", "--no-report"]


def trials_of(results) -> list[dict]:
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    return [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]


def test_a_run_without_engine_sends_with_the_one_this_kernel_runs(tmp_path):
    p = run_capbench(*RUN, "--results", str(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    engines = {t["gen_engine"] for t in trials_of(tmp_path)}
    assert engines == {gen_engine()}
    said = [line for line in p.stderr.splitlines() if "sending with the" in line]
    if xdp_engine_refusal() is None:
        assert said == [], p.stderr
    else:
        assert said == [f"capbench run: sending with the {gen_engine()} engine: "
                        f"{xdp_engine_refusal().split(': use ')[0]}"], p.stderr


def test_engine_xdp_where_the_kernel_refuses_it_is_one_line(tmp_path):
    if xdp_engine_refusal() is None:
        p = run_capbench(*RUN, "--engine", "xdp", "--results", str(tmp_path), timeout=300)
        assert p.returncode == 0 and {t["gen_engine"] for t in trials_of(tmp_path)} == {"xdp"}, p.stderr
        return
    before = capbench_namespaces()
    p = run_capbench(*RUN, "--engine", "xdp", "--results", str(tmp_path), timeout=60)
    assert_one_line_usage_error(p, "capbench", "--engine xdp", "live frames", "use --engine xdploop or afpacket")
    assert left_behind(before) == set() and list(tmp_path.iterdir()) == []
