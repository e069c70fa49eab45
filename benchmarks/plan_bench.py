"""Benchmark of `proposalkit plan` on 1 and on 1000 generated workloads (`make bench`).

Times the whole command as a process (what a user waits for, startup
included) and the planning of one workload in-process. Not a test: figures
vary by machine; the README quotes the ones measured when it was written.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = ["llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "llama-2-13b", "stable-code-3b"]
GPUS = ["a100-40gb", "a100-80gb", "h100-80gb", "h200", "l40s"]


def workload(i: int) -> str:
    """Every fourth workload lets the planner choose the GPU; the rest pin it.

    Each workload's sequence length or context is its own (1,024 + 8·i tokens),
    so no two have the same memory setup: the planner's memoization of repeated
    setups (sweeps, variants) does not flatter the figure.
    """
    kind = i % 4
    name = f"w{i:04d}"
    model = MODELS[i % len(MODELS)]
    seq = 1024 + 8 * i
    if kind == 0:
        return (f"  - {{name: {name}, kind: finetune, method: lora, model: {model}, tokens: {50 + i}M,"
                f" seq_len: {seq}, throughput: {{tokens_per_second: 3000, gpu: a100-80gb, gpus: 1}},"
                f" variants: 3}}\n")
    if kind == 1:
        return (f"  - {{name: {name}, kind: finetune, method: full, model: {model}, tokens: 1B,"
                f" gpu: {GPUS[i % len(GPUS)]}, gpus: 8, seq_len: {seq}}}\n")
    if kind == 2:
        return f"  - {{name: {name}, kind: inference, model: {model}, context: {seq}, batch: 8, hours: 100}}\n"
    return (f"  - {{name: {name}, kind: finetune, method: qlora, model: {model}, tokens: 20M,"
            f" seq_len: {seq}, gpu: {GPUS[i % len(GPUS)]}, gpus: 1}}\n")


def write(path: str, n: int) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("workloads:\n" + "".join(workload(i) for i in range(n)))


def time_command(args: list[str], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _clear_memos() -> None:
    """Forget what earlier runs memoized, so each run pays for every workload."""
    from proposalkit.catalog import shapes
    from proposalkit.estimate import activations, breakdown, cross_checks, lora, memory, storage
    from proposalkit.planning import planner, search

    for module in (activations, breakdown, cross_checks, lora, memory, planner, search, shapes, storage):
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def stages(path: str, n: int, runs: int = 5) -> tuple[float, float, float]:
    """Best-of-``runs`` seconds per workload for load + validate, plan and JSON, in-process."""
    from proposalkit.input import loading
    from proposalkit.planning import planner
    from proposalkit.render import output

    best = [math.inf, math.inf, math.inf]
    for _ in range(runs):
        _clear_memos()
        t0 = time.perf_counter()
        files = loading.load_files([path])
        t1 = time.perf_counter()
        plan = planner.plan_files(files)
        t2 = time.perf_counter()
        output.plan_json(plan)
        t3 = time.perf_counter()
        for i, t in enumerate((t1 - t0, t2 - t1, t3 - t2)):
            best[i] = min(best[i], t / n)
    return best[0], best[1], best[2]


def main() -> None:
    exe = [sys.executable, "-m", "proposalkit", "plan", "--format", "json"]
    with tempfile.TemporaryDirectory() as tmp:
        one, many = os.path.join(tmp, "one.yaml"), os.path.join(tmp, "many.yaml")
        write(one, 1)
        write(many, 1000)
        t1 = time_command(exe + [one])
        t1000 = time_command(exe + [many], runs=3)
        print(f"plan, 1 workload:     {t1 * 1000:7.0f} ms (whole process, median of 5)")
        print(f"plan, 1000 workloads: {t1000 * 1000:7.0f} ms (whole process, median of 3)")
        print(f"per workload:         {(t1000 - t1) / 999 * 1000:7.3f} ms (difference ÷ 999)")
        load, plan, encode = stages(many, 1000)
        print(f"in-process, best of 5, per workload: load + validate {load * 1000:.3f} ms, "
              f"plan {plan * 1000:.3f} ms, JSON {encode * 1000:.3f} ms")


if __name__ == "__main__":
    main()
