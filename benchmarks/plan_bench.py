"""Benchmark of `proposalkit plan` on 1 and on 1000 generated workloads (`make bench`).

Times the whole command as a process (what a user waits for, startup
included) and the planning of one workload in-process. Not a test: figures
vary by machine; the README quotes the ones measured when it was written.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = ["llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "llama-2-13b", "stable-code-3b"]
GPUS = ["a100-40gb", "a100-80gb", "h100-80gb", "h200", "l40s"]


def workload(i: int) -> str:
    """Every fourth workload lets the planner choose the GPU; the rest pin it."""
    kind = i % 4
    name = f"w{i:04d}"
    model = MODELS[i % len(MODELS)]
    if kind == 0:
        return (f"  - {{name: {name}, kind: finetune, method: lora, model: {model}, tokens: {50 + i}M,"
                f" throughput: {{tokens_per_second: 3000, gpu: a100-80gb, gpus: 1}}, variants: 3}}\n")
    if kind == 1:
        return (f"  - {{name: {name}, kind: finetune, method: full, model: {model}, tokens: 1B,"
                f" gpu: {GPUS[i % len(GPUS)]}, gpus: 8, seq_len: 2048}}\n")
    if kind == 2:
        return f"  - {{name: {name}, kind: inference, model: {model}, context: 8k, batch: 8, hours: 100}}\n"
    return (f"  - {{name: {name}, kind: finetune, method: qlora, model: {model}, tokens: 20M,"
            f" gpu: {GPUS[i % len(GPUS)]}, gpus: 1}}\n")


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


if __name__ == "__main__":
    main()
