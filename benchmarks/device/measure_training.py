"""Measure the training runs of benchmarks/validation/measured/ on one GPU: peak memory (allocated, reserved,
the whole device) and steady-state speed under the Hugging Face Trainer, one configuration per process.

    python3 benchmarks/device/measure_training.py --out DIR          # on one H100 (eager rows: about 2-3 minutes)
    python3 benchmarks/device/measure_training.py --out DIR --tiny   # the same code, 2-layer models, on a CPU

Each workload file of index.yaml is read and run as it states (a field the harness cannot honour is refused,
so a file never claims a setting the run did not have); the harness settings every run shares are written in
index.yaml. Each configuration runs in a process forked from this one (torch and transformers imported once,
CUDA initialised only in the child), so a crash, an out-of-memory or a timeout loses that one alone.
DIR/measured.json is rewritten after each configuration (a run cut short keeps what finished); DIR/measure.log
holds every child's output. A global time budget (--budget-s) skips the configurations that would not finish,
the last of index.yaml first; each one stops timing once it has MIN_TIMED steps and TIMED_SECONDS of them.

A file with compile: true runs under the Trainer's torch_compile=True (the rows ending -C, last in index.yaml;
each adds its compile, guessed at 45-130 s cold on an H100: run them with --only and a budget that holds them).
Its timed steps begin after the warm-up and after the last step that compiled; the record adds the compile: the
warm-up's excess over as many median steps, the steps that compiled, torch's compile timers and counters. A
compiled configuration starts only with its whole estimate left, its compile rescaled by the compiles so far.

profile_training.py beside it builds, trains and schedules through this script's functions (open_device,
build_model, build_trainer, run_harness) and profiles where the step time goes.

Needs torch, transformers (5.x), peft, accelerate, numpy and pyyaml: an optional check, never imported by the
package or its tests (CONTRACT: never torch or transformers in the package).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "benchmarks/validation/measured/index.yaml"
CATALOG = ROOT / "proposalkit/catalog/models.yaml"

WARMUP_STEPS = 5        # excluded from speed: cuBLAS handles and kernel selection, the fused AdamW state created at
                        # step 1, the caching allocator's pool still growing
MIN_TIMED = 10          # timed steps at least (the p10/p90 of fewer say little)
MAX_TIMED = 50          # timed steps at most
TIMED_SECONDS = 6.0     # timing stops once MIN_TIMED steps and this many seconds of them are done
H100_PEAK = 989e12      # H100 SXM dense bf16 FLOP/s (datasheet 1,979 with sparsity, halved): the schedule only
ASSUMED_MFU = 0.35      # the schedule's guess for the eager HF Trainer (planned 0.34-0.51): only for skipping
START_SECONDS = 15.0    # the schedule's guess for a child's start: CUDA context, model built on the GPU, Trainer
TINY_SECONDS = 20.0     # the schedule's guess for a --tiny configuration
TINY_COMPILE_SECONDS = 100.0    # and its compile: inductor's C++ kernels of a 2-layer model took 70 s cold on a
                                # shared 2-core CPU (torch 2.13), seconds with its cache warm
SMI_SAMPLE_MS = 250     # power, clocks and device memory read this often while the timed steps run
# compile: true (torch.compile of the whole model, compiled in the first step; recompiles in later steps are seen
# and put in the warm-up too). The schedule's guess for the compile, from the size of the graph traced:
# COMPILE_BASE_S + COMPILE_LAYER_S per decoder layer (dynamo, AOTAutograd and inductor trace and lower each
# layer again; kernels of identical source compile once), × COMPILE_LORA for PEFT's adapters and
# × COMPILE_CHECKPOINT for the recomputation in the backward graph. Read off compiles of Llama decoders of tiny
# dimensions on this project's shared 2-core CPU (torch 2.13, inductor's CPU backend, its kernels cached so that
# the time is the tracing and lowering): 25 s at 2 layers, 1.9-3.2 s per further layer, 5.0 with LoRA rank 16 on
# all linears (×1.5), ×1.26 with checkpointing (8 layers). On an H100 host Triton's compiles of the distinct
# kernels add to it, in parallel, on a faster CPU: a guess, not a measurement of that machine; after each
# compiled configuration the schedule rescales the rest by what it measured (compile_scale).
COMPILE_BASE_S = 15.0
COMPILE_LAYER_S = 2.0
COMPILE_LORA = 1.5
COMPILE_CHECKPOINT = 1.2
COMPILE_EXTRA_STEPS = 5     # steps beyond warmup + max_timed a compiled run may take (recompiles extend the warm-up)

# The harness's values of the format's fields (index.yaml): a file stating another is refused, not run otherwise.
FIXED = {"kind": "finetune", "framework": "hf-trainer", "precision": "bf16", "optimizer": "adamw",
         "loss": "standard", "flash_attention": True, "zero_stage": 0, "gpu": "h100-80gb", "gpus": 1}
SETTINGS = ("method", "model", "seq_len", "micro_batch", "gradient_accumulation_steps",
            "activation_checkpointing", "mixed_precision", "compile", "lora")
IGNORED = ("name", "tokens", "buffer")     # runtime and budget only: nothing the run does depends on them
FAMILIES = {"meta-llama/": "llama", "Qwen/Qwen2": "qwen2"}   # catalog hf_id prefix -> transformers model_type
SMI_GPU_FIELDS = ("name", "driver_version", "power.limit", "power.default_limit", "power.max_limit",
                  "memory.total", "memory.used", "clocks.max.sm", "clocks.max.memory", "persistence_mode",
                  "compute_mode", "mig.mode.current", "vbios_version")
SMI_SAMPLE_FIELDS = ("power.draw", "clocks.sm", "clocks.mem", "temperature.gpu", "utilization.gpu", "memory.used")
MiB = 2**20
NO_GPU = "no CUDA device in the child (a measurement without --tiny needs one)"


@dataclass(frozen=True)
class Shape:
    """The model shape as the catalog row states it (proposalkit/catalog/models.yaml)."""
    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: int
    vocab: int
    max_context: int
    tied_embeddings: bool


@dataclass(frozen=True)
class Config:
    """One workload file, as the run will execute it."""
    id: str
    file: str
    sha256: str
    method: str
    model: str
    shape: Shape
    seq_len: int
    micro_batch: int
    gradient_accumulation_steps: int
    activation_checkpointing: bool
    mixed_precision: bool
    compile: bool
    lora_rank: int | None
    lora_targets: str | list[str] | None

    @property
    def tokens_per_step(self) -> int:
        return self.seq_len * self.micro_batch * self.gradient_accumulation_steps


# ---------------------------------------------------------------- reading the workload files

def read_shape(model_id: str, catalog: dict) -> Shape:
    """The catalog row of `model_id` as a Shape; a family the harness cannot build is an error."""
    rows = {m["id"]: m for m in catalog["models"]}
    if model_id not in rows:
        raise SystemExit(f"model {model_id!r} is not a catalog id ({CATALOG})")
    m = rows[model_id]
    family = next((t for prefix, t in FAMILIES.items() if m.get("hf_id", "").startswith(prefix)), None)
    if family is None:
        raise SystemExit(f"model {model_id!r}: the harness builds Llama and Qwen2 decoders only")
    return decoder_shape(m, family, f"model {model_id!r}")


def decoder_shape(m: dict, model_type: str, what: str) -> Shape:
    """A model mapping in the format's fields (a catalog row, or a workload's own `model:`) as a Shape, with the
    format's defaults (kv_heads = heads, head_dim = hidden ÷ heads, untied); a shape the harness cannot build (not
    a gated-MLP RMSNorm dense decoder) is an error."""
    if m.get("mlp", "gated") != "gated" or m.get("norm", "rmsnorm") != "rmsnorm" or "experts" in m:
        raise SystemExit(f"{what}: the harness builds Llama and Qwen2 decoders only")
    return Shape(model_type=model_type, layers=m["layers"], hidden=m["hidden"], heads=m["heads"],
                 kv_heads=m.get("kv_heads", m["heads"]), head_dim=m.get("head_dim", m["hidden"] // m["heads"]),
                 ffn_hidden=m["ffn_hidden"], vocab=m["vocab"], max_context=m["max_context"],
                 tied_embeddings=bool(m.get("tied_embeddings", False)))


def read_config(row_id: str, directory: Path, catalog: dict) -> Config:
    """The workload file `row_id`.yaml as a Config; every field checked against what the harness runs."""
    path = directory / f"{row_id}.yaml"
    text = path.read_bytes()
    doc = yaml.safe_load(text)
    (w,) = doc["workloads"]
    problems = [f"{k}: the harness runs {v!r}, the file says {w.get(k)!r}" for k, v in FIXED.items() if w.get(k) != v]
    problems += [f"{k}: not a field the harness runs" for k in w if k not in FIXED and k not in SETTINGS + IGNORED]
    method = w.get("method")
    if method not in ("full", "lora"):
        problems.append(f"method: full or lora, got {method!r}")
    lora = w.get("lora") or {}
    if (method == "lora") != bool(lora):
        problems.append("lora: given exactly when method is lora")
    problems += [f"{k}: true or false, got {w.get(k)!r}" for k in ("activation_checkpointing", "mixed_precision",
                                                                   "compile") if not isinstance(w.get(k), bool)]
    if problems:
        raise SystemExit(f"{path}: " + "; ".join(problems))
    targets = lora.get("targets")
    if isinstance(targets, list) and targets == ["all-linear"]:
        targets = "all-linear"                   # the format's one-item list, as PEFT takes it: a plain string
    return Config(id=row_id, file=str(path.relative_to(ROOT)), sha256=hashlib.sha256(text).hexdigest(),
                  method=method, model=w["model"], shape=read_shape(w["model"], catalog), seq_len=int(w["seq_len"]),
                  micro_batch=int(w["micro_batch"]),
                  gradient_accumulation_steps=int(w["gradient_accumulation_steps"]),
                  activation_checkpointing=w["activation_checkpointing"],
                  mixed_precision=w["mixed_precision"], compile=w["compile"], lora_rank=lora.get("rank"),
                  lora_targets=targets)


def tiny(c: Config) -> Config:
    """The same configuration on a 2-layer model of small dimensions (--tiny: CPU, seconds)."""
    s = c.shape
    kv = 4 if s.kv_heads == s.heads else 2
    shape = Shape(s.model_type, layers=2, hidden=64, heads=4, kv_heads=kv, head_dim=16, ffn_hidden=128, vocab=512,
                  max_context=4096, tied_embeddings=s.tied_embeddings)
    return Config(**{**asdict(c), "shape": shape, "seq_len": 64, "micro_batch": min(c.micro_batch, 2)})


# ---------------------------------------------------------------- the schedule (parent)

def parameters(s: Shape) -> int:
    """Parameters of a gated-MLP decoder: embeddings (twice when untied) + per layer attention and MLP."""
    attention = s.hidden * s.head_dim * (2 * s.heads + 2 * s.kv_heads)
    return s.vocab * s.hidden * (1 if s.tied_embeddings else 2) + s.layers * (attention + 3 * s.hidden * s.ffn_hidden)


def estimated_step_seconds(c: Config) -> float:
    """One optimizer step's seconds at ASSUMED_MFU of the H100 peak: 6·N (full) or 4·N (LoRA: no weight
    gradients) + 2·N recomputed under checkpointing, + attention 12·L·s·heads·head_dim (PaLM App. B)."""
    s = c.shape
    n = parameters(s)
    flops = (6 if c.method == "full" else 4) * n + (2 * n if c.activation_checkpointing else 0)
    flops += 12 * s.layers * c.seq_len * s.heads * s.head_dim
    return flops * c.tokens_per_step / (H100_PEAK * ASSUMED_MFU)


def compile_seconds(c: Config) -> float:
    """The schedule's guess for compiling `c` on a cold cache (COMPILE_*); 0 without compile: true."""
    if not c.compile:
        return 0.0
    return ((COMPILE_BASE_S + COMPILE_LAYER_S * c.shape.layers) * (COMPILE_LORA if c.method == "lora" else 1.0)
            * (COMPILE_CHECKPOINT if c.activation_checkpointing else 1.0))


def estimated_seconds(c: Config, steps: tuple[int, int, int, float]) -> float:
    """The child's expected wall time: start + compile + warm-up + the timed steps (at least min_timed, about
    timed_s)."""
    warmup, min_timed, max_timed, timed_s = steps
    step = estimated_step_seconds(c)
    timed = min(max_timed * step, max(min_timed * step, timed_s))
    return START_SECONDS * (1.5 if parameters(c.shape) > 5e9 else 1.0) + compile_seconds(c) + warmup * step + timed


def compile_scale(runs: list[dict]) -> float:
    """How much longer (or shorter) than compile_seconds the compiles so far took: the largest ratio over the
    compiled runs (1 before any), so that the schedule skips rather than runs over. A run that finished gives
    its compile's seconds, one killed at its timeout its whole wall time (its compile took at least that)."""
    ratios = []
    for r in runs:
        guess = r.get("compile_guess_s")
        seconds = (r.get("compile") or {}).get("seconds") if r.get("status") == "ok" else \
            r.get("wall_s") if r.get("status") == "timeout" else None
        if guess and seconds is not None:
            ratios.append(max(seconds, 0.0) / guess)
    return max(ratios) if ratios else 1.0


# ---------------------------------------------------------------- nvidia-smi

def smi(args: list[str], timeout: float = 20.0) -> str | None:
    """nvidia-smi's output, or None where it is missing or fails."""
    try:
        out = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def smi_gpu() -> dict:
    """The GPU's settings, one field per query (an unknown field fails a whole query)."""
    return {f: smi([f"--query-gpu={f}", "--format=csv,noheader"]) for f in SMI_GPU_FIELDS}


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None                         # '[N/A]' where the GPU does not report the field


_NVML: dict = {}     # the NVML handle of GPU 0, once initialised in the child


def smi_sample() -> list[float | None] | None:
    """One reading of SMI_SAMPLE_FIELDS: through NVML (nvidia-ml-py, what nvidia-smi reads) where importable,
    else one nvidia-smi query."""
    try:
        import pynvml
    except ImportError:
        line = smi([f"--query-gpu={','.join(SMI_SAMPLE_FIELDS)}", "--format=csv,noheader,nounits"], timeout=5)
        return [number(x) for x in line.splitlines()[0].split(",")] if line else None
    try:
        if "handle" not in _NVML:
            pynvml.nvmlInit()
            _NVML["handle"] = pynvml.nvmlDeviceGetHandleByIndex(0)
        h = _NVML["handle"]
        util = pynvml.nvmlDeviceGetUtilizationRates(h)
        return [pynvml.nvmlDeviceGetPowerUsage(h) / 1000,                       # mW -> W
                pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
                util.gpu, pynvml.nvmlDeviceGetMemoryInfo(h).used / MiB]         # bytes -> MiB, as nvidia-smi
    except pynvml.NVMLError:
        return None


class Sampler:
    """Power, clocks, temperature, utilisation and device memory read every SMI_SAMPLE_MS in a thread while
    the timed steps run (NVML calls take microseconds and release the GIL while they wait)."""

    def __init__(self, read=smi_sample):
        self.read = read
        self.rows: list[list[float | None]] = []
        self.stopping = threading.Event()
        self.thread = None

    def start(self):
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stopping.is_set():
            row = self.read()
            if row is None:
                return
            self.rows.append(row)
            self.stopping.wait(SMI_SAMPLE_MS / 1000)

    def stop(self) -> dict | None:
        if self.thread is None:
            return None
        self.stopping.set()
        self.thread.join(timeout=10)
        rows = [r for r in self.rows if len(r) == len(SMI_SAMPLE_FIELDS)]
        if not rows:
            return None
        summary = {"samples": len(rows), "period_ms": SMI_SAMPLE_MS, "units": "W, MHz, MHz, C, %, MiB"}
        for i, field in enumerate(SMI_SAMPLE_FIELDS):
            values = sorted(r[i] for r in rows if r[i] is not None)
            if values:
                summary[field] = {"median": values[len(values) // 2], "max": values[-1], "min": values[0]}
        return summary


# ---------------------------------------------------------------- the child: one configuration

def percentiles(values: list[float]) -> dict:
    import numpy as np
    a = np.asarray(values, dtype=float)
    return {"n": len(values), "median": float(np.median(a)), "p10": float(np.percentile(a, 10)),
            "p90": float(np.percentile(a, 90)), "mean": float(a.mean()), "min": float(a.min()), "max": float(a.max())}


def hf_config(shape: Shape):
    """The transformers config of the catalog shape (random weights; no Hub access)."""
    from transformers import AutoConfig
    return AutoConfig.for_model(
        shape.model_type, vocab_size=shape.vocab, hidden_size=shape.hidden, intermediate_size=shape.ffn_hidden,
        num_hidden_layers=shape.layers, num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim, max_position_embeddings=shape.max_context, tie_word_embeddings=shape.tied_embeddings,
        use_cache=False)


def open_device(gpu, require_gpu: bool, result: dict):
    """The memory API (torch.cuda where a GPU is, else False; a stand-in object tests the memory path), the
    torch device, and the memory record with the CUDA context's bytes; the GPU's properties go into result."""
    import torch
    if gpu is None:
        gpu = torch.cuda if torch.cuda.is_available() else False
    if require_gpu and not gpu:
        raise RuntimeError(NO_GPU)
    dev = torch.device("cuda" if gpu is torch.cuda else "cpu")
    mem: dict = {}
    if gpu:
        gpu.init()
        torch.empty(1, device=dev)
        free, total = gpu.mem_get_info()
        mem["cuda_context_bytes_at_start"] = total - free - gpu.memory_reserved()
        props = gpu.get_device_properties(0)
        result["device"] = {"name": props.name, "total_memory_bytes": props.total_memory,
                            "mem_get_info_total_bytes": total, "multiprocessors": props.multi_processor_count,
                            "capability": f"{props.major}.{props.minor}"}
    return gpu, dev, mem


def build_model(c: Config, dev):
    """The model as the workload file states it, random weights on `dev` (index.yaml: the harness settings)."""
    import torch
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    weight_dtype = torch.float32 if (c.method == "full" and c.mixed_precision) else torch.bfloat16
    with dev:
        model = AutoModelForCausalLM.from_config(hf_config(c.shape), dtype=weight_dtype, attn_implementation="sdpa")
    if c.method == "lora":
        from peft import LoraConfig, get_peft_model
        model = get_peft_model(model, LoraConfig(r=c.lora_rank, lora_alpha=2 * c.lora_rank, lora_dropout=0.0,
                                                 target_modules=c.lora_targets, task_type="CAUSAL_LM"),
                               autocast_adapter_dtype=c.mixed_precision)
    return model


def describe_model(model, c: Config) -> dict:
    params = list(model.parameters())
    return {
        "params": sum(p.numel() for p in params),
        "trainable_params": sum(p.numel() for p in params if p.requires_grad),
        "trainable_dtypes": sorted({str(p.dtype) for p in params if p.requires_grad}),
        "frozen_dtypes": sorted({str(p.dtype) for p in params if not p.requires_grad}),
        "attn_implementation": model.config._attn_implementation,
        "shape": asdict(c.shape)}


def build_trainer(c: Config, model, dev, max_steps: int, callbacks: list, logging_steps: int | None = None):
    """The Hugging Face Trainer over uniformly random tokens (enough for max_steps optimizer steps), with the
    harness settings of index.yaml. `logging_steps`: the Trainer logs (loss, tokens seen) every so many steps
    and its memory metrics into state.log_history, the trainer_state.json a pilot cites (example_pilot.py);
    None: no logging, as the measured rows run."""
    import torch
    from transformers import Trainer, TrainingArguments

    n_samples = max_steps * c.micro_batch * c.gradient_accumulation_steps
    tokens = torch.randint(0, c.shape.vocab, (n_samples, c.seq_len), generator=torch.Generator().manual_seed(0))

    class RandomTokens(torch.utils.data.Dataset):
        def __len__(self):
            return n_samples

        def __getitem__(self, i):
            return {"input_ids": tokens[i], "labels": tokens[i]}

    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="measure-"), per_device_train_batch_size=c.micro_batch,
        gradient_accumulation_steps=c.gradient_accumulation_steps, max_steps=max_steps,
        learning_rate=1e-5, lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, bf16=True,
        gradient_checkpointing=c.activation_checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False} if c.activation_checkpointing else None,
        logging_strategy="steps" if logging_steps else "no", logging_steps=logging_steps or 500,
        include_num_input_tokens_seen="all" if logging_steps else "no", skip_memory_metrics=not logging_steps,
        save_strategy="no", eval_strategy="no", report_to="none", disable_tqdm=True,
        dataloader_num_workers=0, remove_unused_columns=False, seed=0, use_cpu=dev.type == "cpu",
        # compile: true is the Trainer's own switch: accelerate's prepare wraps the whole model in torch.compile
        # (backend inductor, default mode, dynamic None). Under bf16 it also calls enable_tf32(True), which on
        # torch ≥ 2.9 sets only the new torch.backends.fp32_precision: the legacy allow_tf32 flags then disagree
        # and torch 2.11 raises RuntimeError wherever they are read (seen on the H100). tf32=False makes the
        # Trainer call enable_tf32(False) after it, back to the default IEEE state the eager rows ran in (every
        # GEMM here is bf16: TF32 touches only fp32 matmuls such as the rotary frequencies).
        torch_compile=c.compile, tf32=False if c.compile and dev.type == "cuda" else None)
    return Trainer(model=model, args=args, train_dataset=RandomTokens(), callbacks=callbacks)


def describe_trainer(trainer) -> dict:
    import torch
    import transformers
    args = trainer.args
    return {"transformers": transformers.__version__, "torch": torch.__version__, "optim": str(args.optim),
            "bf16": args.bf16, "max_grad_norm": args.max_grad_norm,
            "gradient_checkpointing": args.gradient_checkpointing, "torch_compile": args.torch_compile,
            "torch_compile_backend": args.torch_compile_backend, "torch_compile_mode": args.torch_compile_mode,
            "float32_matmul_precision": matmul_precision()}


def matmul_precision() -> str:
    """The fp32 matmul precision in force, read without raising: torch 2.9+ raises from the legacy readers
    once the legacy (allow_tf32) and the new fp32_precision API disagree."""
    import torch
    try:
        return torch.get_float32_matmul_precision()
    except RuntimeError:
        pass
    settings = {}
    for name, read in (("fp32_precision", lambda: torch.backends.fp32_precision),
                       ("cuda.matmul.fp32_precision", lambda: torch.backends.cuda.matmul.fp32_precision),
                       ("cudnn.conv.fp32_precision", lambda: torch.backends.cudnn.conv.fp32_precision)):
        try:
            settings[name] = str(read())
        except (RuntimeError, AttributeError) as error:
            settings[name] = f"unreadable ({type(error).__name__})"
    return "legacy and new APIs disagree: " + ", ".join(f"{k}={v}" for k, v in settings.items())


# ---------------------------------------------------------------- torch.compile's work, seen from outside

def compile_events() -> int:
    """How many timed compile events (dynamo frames, AOTAutograd, inductor's forward and lazy backward, Triton
    autotuning) torch has recorded in this process: a step that raises it compiled something."""
    import torch._dynamo.utils as du
    return sum(len(v) for v in du.compilation_time_metrics.values())


def describe_compile(per_step: list[dict], warmup: int) -> dict:
    """What compiling cost: the warm-up's excess over as many median timed steps (seconds: the compile, its
    autotuning and the first step's own start, what the schedule rescales by), the steps that compiled, the
    phases torch timed (seconds summed, count) and dynamo's, AOTAutograd's and inductor's counters."""
    import torch._dynamo.utils as du
    times = [r["seconds"] for r in per_step if "seconds" in r]
    timed = sorted(times[warmup:])
    median = timed[len(timed) // 2] if timed else None
    metrics = sorted(((k, sum(v), len(v)) for k, v in du.compilation_time_metrics.items()), key=lambda x: -x[1])
    counters = {group: {str(k)[:200]: v for k, v in c.items()} for group, c in du.counters.items()
                if group in ("frames", "stats", "aot_autograd", "inductor", "graph_break", "recompiles")}
    return {"first_step_seconds": times[0] if times else None,
            "seconds": None if median is None else sum(times[:warmup]) - warmup * median,
            "steps_compiling": [i + 1 for i, r in enumerate(per_step) if r.get("compiled")],
            "torch_timed": {k: [round(total, 3), n] for k, total, n in metrics[:40]}, "counters": counters}


def describe_optimizer(trainer, model, into: dict) -> None:
    """After training: the optimizer torch ran (accelerate's wrapper holds torch's) and whether checkpointing was on."""
    opt = getattr(trainer.optimizer, "optimizer", trainer.optimizer)
    if opt is not None:
        into["optimizer"] = {"class": f"{type(opt).__module__}.{type(opt).__name__}",
                             "fused": opt.defaults.get("fused"), "foreach": opt.defaults.get("foreach"),
                             "state_dtypes": sorted({str(t.dtype) for st in opt.state.values()
                                                     for t in st.values() if hasattr(t, "dtype")})}
    into["gradient_checkpointing_on"] = bool(getattr(model, "is_gradient_checkpointing", False))


def run_child(c: Config, steps: tuple[int, int, int, float], result_path: str, gpu=None,
              require_gpu: bool = False) -> None:
    """Build, train and measure one configuration; write what was measured to result_path (JSON). `gpu`: the
    memory API (torch.cuda where a GPU is, else False: speed only; a stand-in object tests the memory path)."""
    import torch
    from transformers import TrainerCallback

    warmup, min_timed, max_timed, timed_s = steps
    result: dict = {"status": "started"}

    def write():
        Path(result_path).write_text(json.dumps(result, indent=1, default=str))

    gpu, dev, mem = open_device(gpu, require_gpu, result)
    result["memory"] = mem
    write()

    model = build_model(c, dev)
    if gpu:
        gpu.synchronize()
        mem["weights_allocated_bytes"] = gpu.memory_allocated()
    result["model"] = describe_model(model, c)

    sync = gpu.synchronize if gpu else (lambda: None)
    sampler = Sampler() if gpu else None
    per_step: list[dict] = []
    clock = {"last": None}
    # The index in per_step of the first timed step: after the warm-up, and after the last step that compiled
    # (compile: true; a recompile in a timed step starts the timing again after it).
    first = {"timed": warmup, "events": 0}

    def phase_peaks(phase: str) -> None:
        """The peaks since the last reset, kept as this step's `phase`, then reset for the next phase."""
        if gpu:
            sync()
            per_step[-1][f"{phase}_alloc"] = gpu.max_memory_allocated()
            per_step[-1][f"{phase}_reserved"] = gpu.max_memory_reserved()
            gpu.reset_peak_memory_stats()

    class Measure(TrainerCallback):
        """Per optimizer step: the peaks of forward + backward (everything but optimizer.step()) and of the
        optimizer step apart (peak statistics reset at each boundary), the device's use and the step's time."""

        def on_step_begin(self, args, state, control, **kw):
            if clock["last"] is None:
                sync()
                clock["last"] = time.perf_counter()
            per_step.append({})

        def on_pre_optimizer_step(self, args, state, control, **kw):
            phase_peaks("fb")

        def on_optimizer_step(self, args, state, control, **kw):
            phase_peaks("step")

        def on_step_end(self, args, state, control, **kw):
            sync()
            now = time.perf_counter()
            rec = per_step[-1]
            rec["seconds"] = now - clock["last"]
            clock["last"] = now
            if gpu:
                free, total = gpu.mem_get_info()
                rec["device_used"] = total - free
                rec["reserved_now"] = gpu.memory_reserved()
            if c.compile:
                events = compile_events()
                rec["compiled"] = events > first["events"]
                first["events"] = events
                if rec["compiled"]:
                    first["timed"] = max(first["timed"], len(per_step))
            if len(per_step) >= first["timed"] and sampler and sampler.thread is None:
                sampler.start()
            timed = per_step[first["timed"]:]
            if len(timed) >= min_timed and sum(r["seconds"] for r in timed) >= timed_s:
                control.should_training_stop = True

    trainer = build_trainer(c, model, dev, warmup + max_timed + (COMPILE_EXTRA_STEPS if c.compile else 0),
                            [Measure()])
    result["trainer"] = describe_trainer(trainer)
    if gpu:
        sync()
        gpu.reset_peak_memory_stats()
    if c.compile:
        first["events"] = compile_events()
    write()
    start = time.perf_counter()
    try:
        trainer.train()
        result["status"] = "ok"
    except torch.OutOfMemoryError as e:
        result["status"] = "oom"
        result["error"] = str(e)[:1500]
        if per_step and gpu:
            per_step[-1]["oom_alloc"] = gpu.max_memory_allocated()
            per_step[-1]["oom_reserved"] = gpu.max_memory_reserved()
    finally:
        power = sampler.stop() if sampler else None
    result["train_seconds"] = time.perf_counter() - start
    describe_optimizer(trainer, model, result["trainer"])
    if gpu:
        sync()
        free, total = gpu.mem_get_info()
        mem["allocated_after_train_bytes"] = gpu.memory_allocated()
        mem["reserved_at_end_bytes"] = gpu.memory_reserved()
        mem["device_used_at_end_bytes"] = total - free
        mem["non_torch_bytes_at_end"] = total - free - gpu.memory_reserved()
        apps = smi(["--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"])
        mem["nvidia_smi_compute_apps"] = apps
        mine = [number(line.split(",")[-1]) for line in (apps or "").splitlines()
                if line.split(",")[0].strip() == str(os.getpid())]
        mem["nvidia_smi_process_used_bytes"] = int(mine[0] * MiB) if mine and mine[0] is not None else None
        stats = gpu.memory_stats()
        mem["allocator"] = {k: stats.get(k) for k in ("num_alloc_retries", "num_ooms", "num_device_alloc",
                                                      "num_device_free")}
        mem["pytorch_cuda_alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
        summarise_memory(mem, per_step, first["timed"])
    result["power"] = power
    result["per_step"] = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in per_step]
    result["speed"] = summarise_speed(c, per_step, first["timed"])
    if c.compile:
        result["compile"] = describe_compile(per_step, first["timed"])
    write()


def summarise_memory(mem: dict, per_step: list[dict], warmup: int) -> None:
    """The peaks over all steps (what one max_memory_allocated over the run gives) and over the timed steps."""
    def peak(rows, *keys):
        values = [r[k] for r in rows for k in keys if r.get(k) is not None]
        return max(values) if values else None

    timed = per_step[warmup:]
    mem["max_allocated_bytes"] = peak(per_step, "fb_alloc", "step_alloc", "oom_alloc")
    mem["max_reserved_bytes"] = peak(per_step, "fb_reserved", "step_reserved", "oom_reserved")
    mem["max_device_used_bytes"] = peak(per_step, "device_used")
    mem["timed_max_allocated_bytes"] = peak(timed, "fb_alloc", "step_alloc")
    mem["timed_max_reserved_bytes"] = peak(timed, "fb_reserved", "step_reserved")
    mem["forward_backward_allocated_bytes"] = peak(timed, "fb_alloc")
    mem["optimizer_step_allocated_bytes"] = peak(timed, "step_alloc")
    mem["first_step_allocated_bytes"] = peak(per_step[:1], "fb_alloc", "step_alloc")
    mem["peak_phase"] = (None if mem["forward_backward_allocated_bytes"] is None
                         or mem["optimizer_step_allocated_bytes"] is None
                         else "optimizer_step" if mem["optimizer_step_allocated_bytes"]
                         > mem["forward_backward_allocated_bytes"] else "forward_backward")


def summarise_speed(c: Config, per_step: list[dict], warmup: int) -> dict | None:
    """Tokens/s from the median step after the warm-up, with the step-to-step spread (p10/p90)."""
    times = [r["seconds"] for r in per_step if "seconds" in r]
    out = {"tokens_per_step": c.tokens_per_step, "steps": len(times), "warmup_steps": min(warmup, len(times)),
           "timed_steps": max(0, len(times) - warmup)}
    timed = times[warmup:]
    if len(timed) < 2:
        return out
    s = percentiles(timed)
    out["step_seconds"] = s
    out["tokens_per_second"] = {"median": c.tokens_per_step / s["median"],
                                "p10": c.tokens_per_step / s["p90"], "p90": c.tokens_per_step / s["p10"],
                                "mean_step": c.tokens_per_step / s["mean"]}
    return out


def child_main(work, c: Config, steps, result_path: str, log_path: str, require_gpu: bool = False) -> None:
    """The child process: its own session (the parent can end it with anything it started), its output to
    log_path, one configuration run by `work` (run_child, or profile_training.py's); an exception is written to
    the result, not lost."""
    os.setsid()
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    try:
        work(c, steps, result_path, require_gpu=require_gpu)
    except BaseException as e:    # noqa: BLE001 - recorded for the parent, then re-raised (exit code non-zero)
        import traceback
        traceback.print_exc()
        try:
            partial = json.loads(Path(result_path).read_text())
        except (OSError, ValueError):
            partial = {}
        partial.update(status="error", error=f"{type(e).__name__}: {e}"[:1500])
        Path(result_path).write_text(json.dumps(partial, indent=1, default=str))
        raise


# ---------------------------------------------------------------- the parent

def environment(tiny_mode: bool) -> dict:
    """Versions and the GPU's settings, read without initialising CUDA in this process (children fork from it)."""
    versions = {}
    for name in ("torch", "transformers", "peft", "accelerate", "triton", "numpy", "PyYAML"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        commit = None                       # the device's copy of the tree may have no git or no .git
    return {"python": platform.python_version(), "platform": platform.platform(), "versions": versions,
            "commit": commit, "tiny": tiny_mode, "cpu_count": os.cpu_count(),
            "nvidia_smi": smi_gpu(), "env": {k: os.environ.get(k) for k in
                                            ("PYTORCH_CUDA_ALLOC_CONF", "CUDA_VISIBLE_DEVICES", "CUDA_MODULE_LOADING",
                                             "CC", "TORCHINDUCTOR_CACHE_DIR", "TORCHINDUCTOR_COMPILE_THREADS")},
            # what torch.compile's kernels are built with (Triton's launchers, inductor's CPU kernels)
            "c_compiler": shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")}


def write_json(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    os.replace(tmp, path)


def gib(x) -> str:
    return "-" if x is None else f"{x / 2**30:.2f}"


def summary_line(run: dict) -> str:
    m, s = run.get("memory") or {}, run.get("speed") or {}
    tps = s.get("tokens_per_second") or {}
    speed = (f"{tps['median']:,.0f} [{tps['p10']:,.0f}-{tps['p90']:,.0f}]" if tps else "-")
    compiled = (run.get("compile") or {}).get("seconds")
    return (f"{run['id']:26s} {run['status']:8s} {gib(m.get('max_allocated_bytes')):>7s} "
            f"{gib(m.get('max_reserved_bytes')):>7s} {gib(m.get('max_device_used_bytes')):>7s} "
            f"{speed:>26s} {s.get('timed_steps', '-'):>5} {run.get('wall_s', 0):6.1f} "
            f"{'-' if compiled is None else f'{compiled:.1f}':>6s}")


# A forked child that cannot use CUDA (the parent's imports initialised the driver: 'poisoned fork') says so in
# one of these; the rest then run in spawned children (each imports torch and transformers itself).
FORK_FAILURES = ("forked subprocess", "initialization error", "CUDA driver initialization failed", NO_GPU)


def run_one(ctx, work, c: Config, est: float, steps, left: float, tmp: str, require_gpu: bool) -> dict:
    """One configuration in a child process, killed with its process group past its timeout."""
    run = {"id": c.id, "file": c.file, "file_sha256": c.sha256, "estimated_s": round(est, 1),
           "start_method": ctx.get_start_method(),
           "settings": {k: v for k, v in asdict(c).items() if k not in ("id", "file", "sha256")}}
    result_path, log_path = Path(tmp) / f"{c.id}.json", Path(tmp) / f"{c.id}.log"
    result_path.unlink(missing_ok=True)
    timeout = min(2 * est + 60, left + 20)
    started = time.perf_counter()
    p = ctx.Process(target=child_main, args=(work, c, steps, str(result_path), str(log_path), require_gpu))
    p.start()
    p.join(timeout)
    timed_out = p.is_alive()
    if timed_out:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.join()
    run["wall_s"] = round(time.perf_counter() - started, 1)
    try:
        run.update(json.loads(result_path.read_text()))
    except (OSError, ValueError):
        run["status"] = "error"
    if timed_out:
        run.update(status="timeout", error=f"killed after {timeout:.0f} s")
    elif p.exitcode != 0 and run.get("status") in ("started", "ok", None):
        run.update(status="error", error=f"exit code {p.exitcode}")
    run["exitcode"] = p.exitcode
    run["log"] = log_path.read_text(errors="replace") if log_path.exists() else ""
    return run


def prepare(only: list[str] | None, tiny_mode: bool, start_method: str) -> tuple[list[Config], str]:
    """Every workload file of index.yaml (or those of `only`) read and checked before any run, torch and
    transformers imported here with CUDA left alone (each child forks with them loaded); the start method."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")          # nothing is downloaded: models come from configs
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # torch.cuda.is_available() through NVML, not cudaGetDeviceCount (which runs cuInit and makes CUDA unusable in
    # forked children): torch/cuda/__init__.py is_available, 'will NOT poison fork' with this set.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

    index = yaml.safe_load(INDEX.read_text())
    catalog = yaml.safe_load(CATALOG.read_text())
    ids = [r["id"] for r in index["rows"] if not only or r["id"] in only]
    configs = [read_config(i, INDEX.parent, catalog) for i in ids]      # every file checked before any run
    if tiny_mode:
        configs = [tiny(c) for c in configs]

    import peft  # noqa: F401
    import torch
    import transformers  # noqa: F401
    from transformers import Trainer  # noqa: F401
    return configs, "spawn" if torch.cuda.is_initialized() else start_method


def run_configs(schedule: list[tuple[Config, float]], steps, work, doc: dict, json_path: Path, log_path: Path,
                t0: float, budget_s: float, method: str, require_gpu: bool, line) -> None:
    """Each configuration of the schedule (with its estimated seconds) in its own child running `work`, while
    the budget lasts; doc["runs"] rewritten to json_path after each, every child's output appended to log_path,
    `line(run)` printed."""
    print(f"{len(schedule)} configurations, estimated {sum(e for _, e in schedule):.0f} s "
          f"(budget {budget_s:.0f} s; imports {time.perf_counter() - t0:.1f} s)", flush=True)
    for c, e in schedule:
        print(f"  {c.id:26s} ~{e:5.1f} s", flush=True)
    log = log_path.open("w")
    deadline = t0 + budget_s
    with tempfile.TemporaryDirectory(prefix="measure-") as tmp:
        for c, est in schedule:
            left = deadline - time.perf_counter()
            # a compiled configuration starts only with its whole estimate left (its compile rescaled by what the
            # compiles so far took); the others with 80% of theirs, as their estimate is a generous one
            scale = compile_scale(doc["runs"]) if c.compile else 1.0
            est += (scale - 1) * compile_seconds(c)
            if left < (est if c.compile else 0.8 * est):
                run = {"id": c.id, "file": c.file, "status": "skipped",
                       "error": f"time budget: {left:.0f} s left, about {est:.0f} s needed"}
            else:
                run = run_one(multiprocessing.get_context(method), work, c, est, steps, left, tmp, require_gpu)
                if c.compile:
                    run.update(compile_guess_s=round(compile_seconds(c), 1), compile_scale=round(scale, 3))
                if (method == "fork" and run["status"] == "error"
                        and any(f in run.get("error", "") + run["log"][-3000:] for f in FORK_FAILURES)):
                    print(f"{c.id}: CUDA unusable in a forked child; spawning each child from here on", flush=True)
                    method = "spawn"
                    left = deadline - time.perf_counter()
                    run = run_one(multiprocessing.get_context(method), work, c, est + 10, steps, left, tmp,
                                  require_gpu)
                child_log = run.pop("log")
                if run["status"] != "ok":
                    run["log_tail"] = child_log[-3000:]
                log.write(f"===== {c.id} ({run['status']}, {run['wall_s']} s, {method})\n{child_log}\n")
                log.flush()
            doc["runs"].append(run)
            write_json(json_path, doc)
            print(line(run), flush=True)
    doc["finished"] = True
    doc["wall_s"] = round(time.perf_counter() - t0, 1)
    write_json(json_path, doc)


def harness_arguments(ap: argparse.ArgumentParser, budget_s: float) -> None:
    """The options every harness script takes (this one and profile_training.py)."""
    ap.add_argument("--tiny", "--dry-run", action="store_true", help="2-layer models, small dimensions (CPU test)")
    ap.add_argument("--budget-s", type=float, default=budget_s, help="stop starting configurations after this")
    ap.add_argument("--only", nargs="*", help="ids of index.yaml to run (default: all, in its order)")
    ap.add_argument("--start-method", choices=("fork", "spawn"), default="fork",
                    help="fork (default: imports shared) or spawn (each child imports torch itself)")


def run_harness(args, script: str, steps: tuple, step_names: tuple, estimate, work, json_name: str, log_name: str,
                line, header: str, extra: dict | None = None) -> int:
    """Read, schedule and run every configuration (prepare, run_configs) into args.out/json_name, then print the
    table (header, one line(run) each); 0 where every configuration ran."""
    t0 = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    configs, method = prepare(args.only, args.tiny, args.start_method)
    doc = {"schema": 1, "script": script, "index": str(INDEX.relative_to(ROOT)),
           "started_unix": time.time(), "budget_s": args.budget_s, "steps": dict(zip(step_names, steps)),
           **(extra or {}), "environment": environment(args.tiny), "finished": False, "runs": []}
    schedule = [(c, TINY_SECONDS + TINY_COMPILE_SECONDS * c.compile if args.tiny else estimate(c, steps))
                for c in configs]
    run_configs(schedule, steps, work, doc, out / json_name, out / log_name, t0, args.budget_s, method,
                not args.tiny, line)
    print(header)
    for run in doc["runs"]:
        print(line(run))
    print(f"total {doc['wall_s']} s; {out / json_name}")
    return 0 if all(r["status"] == "ok" for r in doc["runs"]) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="folder for measured.json and measure.log")
    harness_arguments(ap, budget_s=330.0)
    args = ap.parse_args(argv)
    steps = (2, 3, 3, 0.0) if args.tiny else (WARMUP_STEPS, MIN_TIMED, MAX_TIMED, TIMED_SECONDS)
    header = (f"\n{'id':26s} {'status':8s} {'alloc':>7s} {'reserv':>7s} {'device':>7s} "
              f"{'tokens/s median [p10-p90]':>26s} {'steps':>5s} {'wall_s':>6s} {'comp_s':>6s}   (GiB; comp_s: the "
              f"warm-up's excess, compile: true)")
    return run_harness(args, "benchmarks/device/measure_training.py", steps,
                       ("warmup", "min_timed", "max_timed", "timed_seconds"), estimated_seconds, run_child,
                       "measured.json", "measure.log", summary_line, header)


if __name__ == "__main__":
    sys.exit(main())
