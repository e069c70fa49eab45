"""Run the pilots of the example proposal (workloads/code-models.yaml) on one GPU and write the logs it cites.

    python3 benchmarks/device/example_pilot.py --out DIR            # on the GPU the workloads' pilot: says
    python3 benchmarks/device/example_pilot.py --out DIR --tiny     # the same code, 2-layer models, on a CPU

For each workload of PILOTS, in its own process: the model built as the workload states it (random weights,
the catalog row's shape or the workload's own), trained with the Hugging Face Trainer for STEPS[name] optimizer
steps on uniformly random tokens, under the harness settings of benchmarks/validation/measured/index.yaml
(measure_training.py's build_model and build_trainer), with the Trainer's logging on. Written per workload:

    DIR/NAME/trainer_state.json   the Trainer's own state file (TrainerState.save_to_json, as the Trainer
                                  writes it at a checkpoint): log_history with num_input_tokens_seen and, at
                                  the end, train_runtime and the memory metrics. The workload's pilot: cites it.
    DIR/NAME/measured.json        what the log does not hold: each step's seconds, torch's peak allocated and
                                  reserved bytes, the device's use, the versions and the GPU.

Speed and memory do not depend on the values of the weights or the tokens, only on their shapes: random
weights stand in for the checkpoint (nothing is downloaded) and random token ids for the dataset, every
sequence seq_len long (no padding: all input tokens are real tokens).

A field the harness cannot run as stated is refused (measure_training.py FIXED/SETTINGS): the log never
claims a setting the run did not have. Needs torch, transformers (5.x), peft, accelerate and pyyaml: an
optional measurement, never imported by the package or its tests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure_training as mt  # noqa: E402

WORKLOADS = mt.ROOT / "workloads/code-models.yaml"
# The workloads given a pilot, and the optimizer steps each runs: enough for the warm-up (the first steps
# build cuBLAS handles and the allocator's pool) to be a small part of the whole-run average that
# trainer_state.json gives (num_input_tokens_seen ÷ train_runtime), at about a minute each on an H200.
STEPS = {"lora-sweep": 200, "code-1b-pretrain": 150}
LOGGING_STEPS = 10
TINY_STEPS = 6
CHILD_TIMEOUT_S = 240
# Fields of the example's workloads the pilot runs from, beyond measure_training.SETTINGS; the rest must be
# the harness's (FIXED) or absent.
PILOT_IGNORED = mt.IGNORED + ("description", "variants", "jobs", "pilot", "data")
PILOT_FIXED = {k: v for k, v in mt.FIXED.items() if k not in ("kind", "gpu", "gpus")}


def workload(name: str) -> dict:
    doc = yaml.safe_load(WORKLOADS.read_text())
    rows = {w["name"]: w for w in doc["workloads"]}
    if name not in rows:
        raise SystemExit(f"{WORKLOADS}: no workload {name!r}")
    return rows[name]


def config(name: str) -> mt.Config:
    """The workload `name` as the harness runs it; every field it states is run as stated or refused."""
    w = workload(name)
    problems = [f"{k}: the harness runs {v!r}, the workload says {w[k]!r}" for k, v in PILOT_FIXED.items()
                if k in w and w[k] != v]
    problems += [f"{k}: not a field the harness runs" for k in w
                 if k not in PILOT_FIXED and k not in mt.SETTINGS + PILOT_IGNORED + ("kind",)]
    problems += [f"{k}: the pilot runs what the workload states; state it" for k in
                 ("framework", "micro_batch", "activation_checkpointing") if k not in w]
    if w.get("kind") not in ("finetune", "pretrain"):
        problems.append(f"kind: finetune or pretrain, got {w.get('kind')!r}")
    method = w.get("method", "full")
    lora = w.get("lora") or {}
    if (method == "lora") != bool(lora):
        problems.append("lora: given exactly when method is lora")
    if problems:
        raise SystemExit(f"{WORKLOADS}: {name}: " + "; ".join(problems))
    catalog = yaml.safe_load(mt.CATALOG.read_text())
    model = w["model"]
    shape = (mt.read_shape(model, catalog) if isinstance(model, str)
             else mt.decoder_shape(model, "llama", f"{WORKLOADS}: model {model.get('name')!r}"))
    seq_len = (w.get("data") or {}).get("seq_len") or w.get("seq_len")
    targets = lora.get("targets")
    if isinstance(targets, list) and targets == ["all-linear"]:
        targets = "all-linear"
    text = WORKLOADS.read_bytes()
    return mt.Config(id=name, file=str(WORKLOADS.relative_to(mt.ROOT)), sha256=hashlib.sha256(text).hexdigest(),
                     method=method, model=model if isinstance(model, str) else model["name"], shape=shape,
                     seq_len=int(seq_len), micro_batch=int(w["micro_batch"]),
                     gradient_accumulation_steps=int(w.get("gradient_accumulation_steps", 1)),
                     activation_checkpointing=bool(w["activation_checkpointing"]),
                     mixed_precision=bool(w.get("mixed_precision", True)), compile=bool(w.get("compile", False)),
                     lora_rank=lora.get("rank"), lora_targets=targets)


def child(name: str, out: Path, tiny_mode: bool) -> None:
    """Build, train and log one workload's pilot into out/name/."""
    from transformers import TrainerCallback

    c = config(name)
    if tiny_mode:
        c = mt.tiny(c)
    steps = TINY_STEPS if tiny_mode else STEPS[name]
    where = out / name
    where.mkdir(parents=True, exist_ok=True)
    record: dict = {"workload": name, "file": c.file, "file_sha256": c.sha256, "config": mt.asdict(c),
                    "steps": steps, "logging_steps": LOGGING_STEPS, "environment": mt.environment(tiny_mode)}
    gpu, dev, mem = mt.open_device(None, not tiny_mode, record)
    record["memory"] = mem
    model = mt.build_model(c, dev)
    record["model"] = mt.describe_model(model, c)
    sync = gpu.synchronize if gpu else (lambda: None)
    per_step: list[dict] = []
    clock = {"last": None}

    class Steps(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if clock["last"] is None:
                sync()
                clock["last"] = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            sync()
            now = time.perf_counter()
            rec = {"seconds": round(now - clock["last"], 6)}
            clock["last"] = now
            if gpu:
                free, total = gpu.mem_get_info()
                rec["device_used"] = total - free
            per_step.append(rec)

    trainer = mt.build_trainer(c, model, dev, steps, [Steps()], logging_steps=LOGGING_STEPS)
    record["trainer"] = mt.describe_trainer(trainer)
    if gpu:
        sync()
        gpu.reset_peak_memory_stats()
    start = time.perf_counter()
    trainer.train()
    record["train_seconds"] = time.perf_counter() - start
    trainer.state.save_to_json(str(where / "trainer_state.json"))
    if gpu:
        mem["max_allocated_bytes"] = gpu.max_memory_allocated()
        mem["max_reserved_bytes"] = gpu.max_memory_reserved()
        mem["max_device_used_bytes"] = max(r["device_used"] for r in per_step)
    times = [r["seconds"] for r in per_step]
    record["per_step"] = per_step
    record["speed"] = {"tokens_per_step": c.tokens_per_step, "warmup_steps": mt.WARMUP_STEPS,
                       "step_seconds": mt.percentiles(times[mt.WARMUP_STEPS:]) if len(times) > mt.WARMUP_STEPS + 1
                       else None}
    mt.write_json(where / "measured.json", record)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--tiny", action="store_true", help="2-layer models of small dimensions, on a CPU")
    ap.add_argument("--only", nargs="*", choices=sorted(STEPS), help="these workloads only")
    ap.add_argument("--child", choices=sorted(STEPS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.out, args.tiny)
        return 0
    for name in args.only or STEPS:
        config(name)                        # refuse a workload the harness cannot run before any GPU time
    failed = 0
    for name in args.only or STEPS:
        cmd = [sys.executable, __file__, "--out", str(args.out), "--child", name] + (["--tiny"] if args.tiny else [])
        print(f"{name}: {' '.join(cmd)}", flush=True)
        try:
            rc = subprocess.run(cmd, timeout=CHILD_TIMEOUT_S, env={**os.environ, "PYTHONUNBUFFERED": "1"}).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
        done = args.out / name / "measured.json"
        if rc != 0 or not done.exists():
            failed += 1
            print(f"{name}: failed ({rc})", flush=True)
            continue
        m = json.loads(done.read_text())
        state = json.loads((args.out / name / "trainer_state.json").read_text())
        final = state["log_history"][-1]
        print(f"{name}: {state.get('num_input_tokens_seen')} tokens in {final.get('train_runtime')} s; "
              f"step median {((m['speed'].get('step_seconds') or {}).get('median'))} s; "
              f"max reserved {m['memory'].get('max_reserved_bytes')} B", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
