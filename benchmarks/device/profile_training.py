"""Profile the training runs of benchmarks/validation/measured/ on one GPU: where each step's time goes.

    python3 benchmarks/device/profile_training.py --out DIR          # on one H100 (about 2-3 minutes)
    python3 benchmarks/device/profile_training.py --out DIR --tiny   # the same code, 2-layer models, on a CPU
    python3 benchmarks/device/profile_training.py --self-test         # the classification rules alone (no torch)

Each configuration is built and trained by measure_training.py's own functions (the workload file as written,
the harness settings of index.yaml), in its own forked child, under the same time budget and schedule. It runs
WARMUP_STEPS steps, TIMED_STEPS steps timed without the profiler, then torch.profiler (CPU and CUDA activities,
with_flops) over PROFILER_WARMUP steps, discarded (CUPTI's start), and PROFILED_STEPS steps, analysed.

In the profiled steps the script marks, as record_function ranges: each step (end of the previous step's
synchronize to the end of its own); the Trainer's phases: forward (Trainer.compute_loss: model forward and
loss), backward (accelerator.backward: recompute included), clip_grad (accelerator.clip_grad_norm_), optimizer
(between the on_pre_optimizer_step and on_optimizer_step callbacks) and other (data, loss checks, .item()
syncs, scheduler, zero_grad); and regions: the forward of each tagged module (norms, attention and MLP blocks,
LoRA adapters, embedding, LM head, decoder layer) and the loss function. A kernel belongs to the step and
phase whose range holds the start of the CPU op that launched it (its linked correlation id), and to the
innermost region around that op; a backward op to the region of the forward op that made its autograd node
(the node's sequence number), a recomputed op to its region as "recompute".

Per configuration DIR/profile.json (rewritten after each) holds, per step (averaged over the analysed steps):
wall time; GPU busy time (union of kernel, memcpy and memset intervals) and the idle time, by phase of the CPU
when the GPU idled; kernel time and count by category (gemm, attention, loss, norm, elementwise, optimizer,
grad_clip, reduction, index, memcpy, memset, other), with each category's top kernels; the top kernels;
phases and regions by category; CUDA launches and host synchronisations; achieved GEMM FLOP/s (FLOPs counted
by the profiler on aten::mm/addmm/bmm/baddbmm, and from the model's linear layers). --tiny runs the same code
on a CPU, where the "kernels" are the CPU ops' self times.

Under compile: true (the -C rows) the Trainer compiles the whole model: no regions are marked (inductor's fused
kernels span the modules, and wrapping them would recompile), kernels fall into categories by name alone, and the
record adds the compile (measure_training.describe_compile over the unprofiled steps).

Reading it: kernel durations do not depend on the profiler, but the CPU's ops do (the profiler records each), so
a launch-bound step is slower profiled (profiler_slowdown). Kernel times are therefore set against the unprofiled
step: busy_pct_of_unprofiled_step = GPU busy time ÷ unprofiled step, and the summary line's percentages are
shares of the unprofiled step (what is not busy there is the GPU waiting for the CPU: launches, Python, syncs).
All times are milliseconds per optimizer step.

Needs what measure_training.py needs; an optional check, never imported by the package or its tests.
"""

from __future__ import annotations

import argparse
import bisect
import functools
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import measure_training as mt  # noqa: E402  (the sibling script: the model, Trainer and parent loop are its)

WARMUP_STEPS = 3        # unprofiled, untimed: kernel selection, the fused AdamW state made at step 1, the allocator
TIMED_STEPS = 3         # unprofiled, timed: the step time the profile is compared with (median)
PROFILER_WARMUP = 1     # profiled, discarded: CUPTI and kineto start on the first profiled step
PROFILED_STEPS = 3      # profiled and analysed
PROFILED_SLOWDOWN = 1.5     # the schedule's guess for a profiled step against an unprofiled one
ANALYSIS_SECONDS = 8.0      # the schedule's guess for stopping the profiler and reading its events
TOP_KERNELS = 15
TOP_PER_CATEGORY = 5
NAME_CHARS = 120
ANN = "proposalkit:"    # the prefix of this script's record_function ranges
EVALUATE = "autograd::engine::evaluate_function: "      # the range the autograd engine puts around a node
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")     # the ops with_flops counts as GEMMs

CATEGORIES = ("gemm", "attention", "loss", "norm", "elementwise", "optimizer", "grad_clip", "reduction", "index",
              "memcpy", "memset", "other")
PHASES = ("forward", "backward", "clip_grad", "optimizer", "other")
# Kernel (or, on a CPU or for a kernel no rule names, launching op) name → category: the first rule whose
# substring the lower-cased name holds. Order matters: attention kernels may carry 'cutlass', GEMM ops 'add',
# 'multi_tensor' holds 'mul', nll_loss's kernel 'reduce', 'scatter' 'cat'. Names as CUDA kernels are called
# under torch 2.x with cuBLAS 12/13 on Hopper (nvjet_*, sm90_xmma_gemm_*, cutlass3x_*, cublasLt splitKreduce),
# flash / memory-efficient / cuDNN SDPA, at::native's TensorIterator and multi_tensor_apply kernels. Under
# torch.compile inductor names its Triton kernels triton_{poi,red,per}_fused_ + the aten ops fused (descriptive_names
# "original_aten"): one the loss or index rules do not name is elementwise, norms included (they fuse with the
# residual adds and casts around them).
NAME_RULES = (
    ("attention", ("flash", "fmha", "sdpa", "attention")),
    ("gemm", ("gemm", "gemv", "nvjet", "cublas", "cutlass", "xmma", "splitkreduce", "aten::mm", "aten::addmm",
              "aten::bmm", "aten::baddbmm", "aten::_addmm")),
    ("loss", ("cross_entropy", "log_softmax", "logsoftmax", "nll_loss", "softmax")),
    ("norm", ("rms_norm", "rmsnorm", "layer_norm", "layernorm")),
    ("optimizer", ("adam", "multi_tensor_apply", "foreach", "fused_sgd")),
    ("reduction", ("reduce_kernel", "reduce", "lpnorm", "aten::sum", "aten::mean", "vector_norm", "aten::norm")),
    ("elementwise", ("elementwise",)),
    ("index", ("embedding", "index", "gather", "scatter", "sort", "cub::")),
    ("elementwise", ("copy", "cast", "fill", "zero", "silu", "gelu", "mul", "add", "div", "sub", "neg", "rsqrt",
                     "sqrt", "pow", "exp", "where", "cat", "aten::to", "aten::_to", "clamp", "dropout", "triu",
                     "tril", "arange", "masked", "bernoulli", "sigmoid", "tanh", "unary", "binary", "triton_")),
)


# ---------------------------------------------------------------- classification (pure: no torch)

@functools.lru_cache(maxsize=None)
def category_by_name(name: str) -> str | None:
    """The category NAME_RULES gives a kernel or op name, or None."""
    low = name.lower()
    for category, parts in NAME_RULES:
        if any(p in low for p in parts):
            return category
    return None


def categorise(kind: str, name: str, op: str | None, phase: str, region: str | None) -> str:
    """A kernel's category: memcpy/memset by kind; everything launched while clipping or in the optimizer step
    is grad_clip or optimizer; everything the loss function launched (forward or backward) is loss; then the
    kernel's name, else the launching op's; inside a norm module what is not a GEMM is norm (Hugging Face's
    RMSNorm is Python: a cast, pow, mean, rsqrt and two muls, none of them named norm)."""
    if kind in ("memcpy", "memset"):
        return kind
    if phase == "clip_grad":
        return "grad_clip"
    if phase == "optimizer":
        return "optimizer"
    if region == "loss":
        return "loss"
    category = category_by_name(name) or (category_by_name(op) if op else None) or "other"
    if region == "norm" and category not in ("gemm", "memcpy", "memset"):
        return "norm"
    return category


def region_tag(name: str, class_name: str, lora_wrapper: bool) -> str | None:
    """The region a module's forward is marked as (innermost wins), from its qualified name and class: a PEFT
    LoRA layer is "lora" (adapters, scaling, the add) and its base_layer the block it sits in."""
    dotted = name + "."
    block = ("attention" if ".self_attn." in dotted else "mlp" if ".mlp." in dotted
             else "lm_head" if "lm_head" in name else "linear")
    if lora_wrapper:
        return "lora"
    if name.endswith("base_layer"):
        return block
    if class_name.endswith(("RMSNorm", "LayerNorm")):
        return "norm"
    if name.endswith(".self_attn"):
        return "attention"
    if name.endswith(".mlp"):
        return "mlp"
    if name.endswith("embed_tokens"):
        return "embedding"
    if name.endswith("lm_head"):
        return "lm_head"
    if name.endswith("rotary_emb"):
        return "rotary"
    if re.search(r"\.layers\.\d+$", name):
        return "layer"
    return None


def union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Disjoint sorted intervals covering the same time as `intervals` (kernels on several streams overlap)."""
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def gaps(busy: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The parts of [start, end) that the disjoint sorted `busy` does not cover."""
    out, t = [], start
    for a, b in busy:
        a, b = max(a, start), min(b, end)
        if b <= a:
            continue
        if a > t:
            out.append((t, a))
        t = max(t, b)
    if t < end:
        out.append((t, end))
    return out


def overlap_by_label(spans: list[tuple[int, int]], labelled: list[tuple[int, int, str]], default: str) -> dict:
    """Time of `spans` (disjoint) inside each labelled range (disjoint, sorted), the rest under `default`."""
    out: dict[str, int] = {}
    starts = [r[0] for r in labelled]
    for a, b in spans:
        covered = 0
        i = max(0, bisect.bisect_right(starts, a) - 1)
        while i < len(labelled) and labelled[i][0] < b:
            s, e, label = labelled[i]
            part = min(b, e) - max(a, s)
            if part > 0:
                out[label] = out.get(label, 0) + part
                covered += part
            i += 1
        if b - a - covered > 0:
            out[default] = out.get(default, 0) + (b - a - covered)
    return out


def label_at(t: int, starts: list[int], ranges: list[tuple[int, int, str]]) -> str | None:
    """The label of the range (sorted, disjoint) holding time t, or None."""
    i = bisect.bisect_right(starts, t) - 1
    if i >= 0 and t < ranges[i][1]:
        return ranges[i][2]
    return None


# ---------------------------------------------------------------- the profiler's events → a profile

class Op:
    """One CPU op or record_function range of the trace (only the fields the analysis reads)."""
    __slots__ = ("name", "start", "end", "thread", "fwd_thread", "seq", "corr", "flops", "annotation",
                 "region", "pass_", "self_ns")

    def __init__(self, name, start, end, thread, fwd_thread, seq, corr, flops, annotation):
        self.name, self.start, self.end, self.thread = name, start, end, thread
        self.fwd_thread, self.seq, self.corr, self.flops, self.annotation = fwd_thread, seq, corr, flops, annotation
        self.region, self.pass_, self.self_ns = None, None, end - start


def device_kind(activity: str, name: str, annotation: bool) -> str | None:
    """kernel, memcpy or memset for a device event, None for the rest (GPU user annotations, syncs)."""
    if annotation or "annotation" in activity or name.startswith(ANN):
        return None
    if activity:
        return {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}.get(activity)
    low = name.lower()      # a torch whose events have no activity_type: by name
    if low.startswith("memcpy"):
        return "memcpy"
    if low.startswith("memset"):
        return "memset"
    return None if "sync" in low else "kernel"


def read_events(events, cpu_type) -> tuple[list[Op], list[tuple], list[tuple], dict]:
    """The kineto events as CPU ops, runtime calls (cudaLaunchKernel & co: CPU events linked
    to an op) and device events (kind, name, start, end, linked op's correlation id)."""
    ops, runtime, device, activities = [], [], [], {}
    has_activity = bool(events) and hasattr(events[0], "activity_type")          # both newer than torch 2.0
    has_annotation = bool(events) and hasattr(events[0], "is_user_annotation")
    for e in events:
        name = e.name()
        activity = e.activity_type().lower() if has_activity else ""
        activities[activity or "?"] = activities.get(activity or "?", 0) + 1
        annotation = bool(e.is_user_annotation()) if has_annotation else name.startswith(ANN)
        start = e.start_ns()
        end = start + e.duration_ns()
        if e.device_type() == cpu_type:
            linked = e.linked_correlation_id()
            if linked > 0 or activity in ("cuda_runtime", "cuda_driver"):
                runtime.append((name, start, end, linked))
                continue
            if (activity not in ("cpu_op", "user_annotation", "") or e.is_async()
                    or e.start_thread_id() != e.end_thread_id()):
                continue                                    # CUPTI overhead, instant events, async ranges
            evaluate = name.startswith(EVALUATE)
            ops.append(Op(name, start, end, e.start_thread_id(), e.fwd_thread_id() if evaluate else 0,
                          e.sequence_nr(), e.correlation_id(), e.flops() if name in GEMM_OPS else 0,
                          annotation or name.startswith(ANN)))
        else:
            kind = device_kind(activity, name, annotation)
            if kind:
                device.append((kind, name, start, end, e.linked_correlation_id()))
    return ops, runtime, device, activities


def nest(ops: list[Op]) -> None:
    """Each op's self time and context, from the nesting of ops on each thread: its innermost region range
    (proposalkit:region:R; a region entered inside the backward is "recompute") or autograd node (the region of
    the forward op that made it: the node's sequence number and forward thread), and the pass."""
    ops.sort(key=lambda o: (o.start, -o.end))
    stacks: dict[int, list[Op]] = {}
    made_by: dict[tuple[int, int], str | None] = {}     # (thread, sequence number) → region of the forward op
    for op in ops:
        stack = stacks.setdefault(op.thread, [])
        while stack and stack[-1].end <= op.start:
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is not None:
            parent.self_ns -= op.end - op.start
        region, pass_ = (parent.region, parent.pass_) if parent is not None else (None, None)
        if op.name.startswith(ANN + "region:"):
            region = op.name[len(ANN + "region:"):]
            pass_ = "recompute" if pass_ in ("backward", "recompute") else "forward"
        elif op.name.startswith(EVALUATE):
            node = op.name[len(EVALUATE):]
            region = made_by.get((op.fwd_thread, op.seq)) if op.seq >= 0 else None
            region = region or ("grad_accumulate" if "AccumulateGrad" in node else "untagged")
            pass_ = "backward"
        elif op.seq >= 0 and pass_ != "backward":
            made_by.setdefault((op.thread, op.seq), region)
        op.region, op.pass_ = region, pass_
        stack.append(op)


def ranges(ops: list[Op], prefix: str) -> list[tuple[int, int, str]]:
    """The record_function ranges named prefix + label, as sorted (start, end, label)."""
    return sorted((o.start, o.end, o.name[len(prefix):]) for o in ops if o.name.startswith(prefix))


def add(table: dict, key, ns: int, count: int = 1) -> None:
    row = table.setdefault(key, [0, 0])
    row[0] += ns
    row[1] += count


def analyse(ops: list[Op], runtime: list[tuple], device: list[tuple], steps: list[str], on_gpu: bool,
            peak_flops: float | None, model_flops: dict) -> dict:
    """The profile of the analysed `steps` (labels of proposalkit:step ranges), per step."""
    nest(ops)
    step_ranges = [r for r in ranges(ops, ANN + "step:") if r[2] in steps]
    phase_ranges = ranges(ops, ANN + "phase:")
    step_starts, phase_starts = [r[0] for r in step_ranges], [r[0] for r in phase_ranges]
    n = len(step_ranges)
    if n == 0:
        return {"error": "no analysed step in the trace"}
    by_corr = {o.corr: o for o in ops}

    # the work: kernels (GPU) or ops' self times (CPU), each with its launching op
    items = []          # (kind, name, start, end, ns, op)
    if on_gpu:
        for kind, name, start, end, linked in device:
            items.append((kind, name, start, end, end - start, by_corr.get(linked)))
    else:
        for o in ops:
            if not o.annotation and not o.name.startswith(EVALUATE) and o.self_ns > 0:
                items.append(("cpu_op", o.name, o.start, o.end, o.self_ns, o))

    categories: dict = {}
    per_category: dict = {}
    by_name: dict = {}
    phases: dict = {}
    regions: dict = {}
    busy_per_step: dict[str, list] = {r[2]: [] for r in step_ranges}
    unattributed = [0, 0]
    for kind, name, start, end, ns, op in items:
        t = op.start if op is not None else start       # launch time; a kernel with no op: its own start
        step = label_at(t, step_starts, step_ranges)
        if step is None:
            continue
        phase = label_at(t, phase_starts, phase_ranges) or "other"
        if op is None:
            unattributed[0] += ns
            unattributed[1] += 1
        region = op.region if op is not None else None
        pass_ = (op.pass_ if op is not None else None) or ("backward" if phase == "backward" else "forward")
        pass_ = pass_ if pass_ in ("forward", "backward", "recompute") else "forward"
        category = categorise(kind, name, op.name if op is not None else None, phase, region)
        add(categories, category, ns)
        add(per_category.setdefault(category, {}), name, ns)
        by_name.setdefault(name, [0, 0, category])
        by_name[name][0] += ns
        by_name[name][1] += 1
        p = phases.setdefault(phase, {"kernel_ns": 0, "count": 0, "categories": {}})
        p["kernel_ns"] += ns
        p["count"] += 1
        p["categories"][category] = p["categories"].get(category, 0) + ns
        if phase not in ("forward", "backward"):
            busy_per_step[step].append((start, end))
            continue
        r = regions.setdefault(region or "untagged", {"forward": 0, "backward": 0, "recompute": 0, "categories": {},
                                                      "counts": {"forward": 0, "backward": 0, "recompute": 0}})
        r[pass_] += ns
        r["counts"][pass_] += 1
        r["categories"][category] = r["categories"].get(category, 0) + ns
        busy_per_step[step].append((start, end))

    ms = 1e-6 / n       # ns summed over n steps → ms per step
    step_ns = [e - s for s, e, _ in step_ranges]
    step_ms = sum(step_ns) * ms
    kernel_ms = sum(v[0] for v in categories.values()) * ms

    # GPU busy (union) and idle by the phase the CPU was in
    busy_ns, idle_by_phase = 0, {}
    for s, e, label in step_ranges:
        covered = union([(max(a, s), min(b, e)) for a, b in busy_per_step[label] if min(b, e) > max(a, s)])
        busy_ns += sum(b - a for a, b in covered)
        for phase, ns in overlap_by_label(gaps(covered, s, e), phase_ranges, "other").items():
            idle_by_phase[phase] = idle_by_phase.get(phase, 0) + ns
    busy_ms = busy_ns * ms
    for phase, ns in idle_by_phase.items():
        phases.setdefault(phase, {"kernel_ns": 0, "count": 0, "categories": {}})["idle_ns"] = ns
    cpu_by_phase: dict[str, int] = {}
    for s, e, label in phase_ranges:
        if label_at(s, step_starts, step_ranges) is not None:
            cpu_by_phase[label] = cpu_by_phase.get(label, 0) + e - s

    # GEMM FLOPs: counted by the profiler on the GEMM ops the analysed steps launched
    gemm_flops = sum(o.flops for o in ops if o.flops and label_at(o.start, step_starts, step_ranges)) / n
    gemm_ms = categories.get("gemm", [0, 0])[0] * ms

    def rate(flops):
        return flops / (gemm_ms / 1e3) if gemm_ms > 0 and flops else None

    def share(peak_rate):
        return peak_rate / peak_flops if peak_rate and peak_flops else None

    # the host: kernel launches and synchronisations
    launches, syncs, sync_sites = [0, 0], [0, 0], {}
    for name, start, end, linked in runtime:
        if label_at(start, step_starts, step_ranges) is None:
            continue
        if "LaunchKernel" in name or "GraphLaunch" in name:
            launches[0] += end - start
            launches[1] += 1
        elif "Synchronize" in name:
            syncs[0] += end - start
            syncs[1] += 1
            op = by_corr.get(linked)
            site = f"{label_at(start, phase_starts, phase_ranges) or 'other'}: {op.name if op else '?'}"
            add(sync_sites, site, end - start)

    def top(table: dict, k: int) -> list[dict]:
        rows = sorted(table.items(), key=lambda kv: -kv[1][0])[:k]
        return [{"name": name[:NAME_CHARS], "ms": round(v[0] * ms, 4), "count": round(v[1] / n, 2),
                 "mean_us": round(v[0] / v[1] / 1e3, 2) if v[1] else None} for name, v in rows]

    def pct(x, of):
        return round(100 * x / of, 2) if of else None

    return {
        "source": "cuda kernels (CUPTI)" if on_gpu else "cpu ops (self time)",
        "analysed_steps": n,
        "step_ms": round(step_ms, 3), "step_ms_each": [round(x * 1e-6, 3) for x in step_ns],
        "busy_ms": round(busy_ms, 3), "idle_ms": round(step_ms - busy_ms, 3),
        "busy_pct_of_step": pct(busy_ms, step_ms),
        "kernel_ms": round(kernel_ms, 3), "kernels": round(sum(v[1] for v in categories.values()) / n, 1),
        "unattributed": {"ms": round(unattributed[0] * ms, 3), "count": round(unattributed[1] / n, 1)},
        "categories": {c: {"ms": round(categories[c][0] * ms, 3), "count": round(categories[c][1] / n, 1),
                           "pct_of_kernel_time": pct(categories[c][0] * ms, kernel_ms),
                           "pct_of_step": pct(categories[c][0] * ms, step_ms),
                           "top": top(per_category[c], TOP_PER_CATEGORY)}
                       for c in CATEGORIES if c in categories},
        "top_kernels": [dict(row, category=by_name[name][2]) for name, row in
                        zip(sorted(by_name, key=lambda k: -by_name[k][0]), top(by_name, TOP_KERNELS))],
        "phases": {p: {"cpu_ms": round(cpu_by_phase.get(p, 0) * ms, 3),
                       "kernel_ms": round(v["kernel_ns"] * ms, 3), "kernels": round(v["count"] / n, 1),
                       "gpu_idle_ms": round(v.get("idle_ns", 0) * ms, 3),
                       "categories": {c: round(x * ms, 3) for c, x in sorted(v["categories"].items(),
                                                                           key=lambda kv: -kv[1])}}
                   for p, v in sorted(phases.items(), key=lambda kv: PHASES.index(kv[0])
                                      if kv[0] in PHASES else len(PHASES))},
        "regions": {r: {"forward_ms": round(v["forward"] * ms, 3), "backward_ms": round(v["backward"] * ms, 3),
                        "recompute_ms": round(v["recompute"] * ms, 3),
                        "kernels": {k: round(x / n, 1) for k, x in v["counts"].items()},
                        "categories": {c: round(x * ms, 3) for c, x in sorted(v["categories"].items(),
                                                                            key=lambda kv: -kv[1])}}
                    for r, v in sorted(regions.items(), key=lambda kv: -(kv[1]["forward"] + kv[1]["backward"]
                                                                        + kv[1]["recompute"]))},
        "gemm": {"ms": round(gemm_ms, 3), "flops_profiler": gemm_flops,
                 "flops_per_s_profiler": rate(gemm_flops), "fraction_of_peak_profiler": share(rate(gemm_flops)),
                 "flops_model": model_flops.get("gemm_per_step"),
                 "flops_per_s_model": rate(model_flops.get("gemm_per_step")),
                 "fraction_of_peak_model": share(rate(model_flops.get("gemm_per_step"))),
                 "peak_flops": peak_flops},
        "host": {"launches": round(launches[1] / n, 1), "launch_cpu_ms": round(launches[0] * ms, 3),
                 "syncs": round(syncs[1] / n, 1), "sync_cpu_ms": round(syncs[0] * ms, 3),
                 "sync_sites": top(sync_sites, 6)},
        "events": {"cpu_ops": len(ops), "runtime": len(runtime), "device": len(device)},
    }


# ---------------------------------------------------------------- FLOPs from the model

def model_flops(model, c: mt.Config) -> dict:
    """FLOPs per step of the model's linear layers, from their shapes: forward 2·in·out per token, input
    gradient 2·in·out, weight gradient 2·in·out where the weight trains, recomputed forward 2·in·out inside a
    checkpointed decoder layer (Kaplan et al. 2020 6·N; the LoRA rule, Hu et al. 2021: frozen weights need no
    weight gradient; adapters are linears of their own). Input gradients are counted for every linear; under
    LoRA the first layer's q/k/v need none (frozen embeddings), a few per mille of the total. Attention
    (QKᵀ and AV, PaLM App. B) 12·L·H·Q·T per token, + 4·L·H·Q·T recomputed, counted as if not causal."""
    import torch
    f = {"forward": 0, "input_grad": 0, "weight_grad": 0, "recompute": 0}
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.Linear):
            flops = 2 * m.in_features * m.out_features
            f["forward"] += flops
            f["input_grad"] += flops
            f["weight_grad"] += flops if m.weight.requires_grad else 0
            f["recompute"] += flops if c.activation_checkpointing and re.search(r"\.layers\.\d+\.", name) else 0
    s = c.shape
    attention = 12 * s.layers * s.heads * s.head_dim * c.seq_len
    per_token = sum(f.values())
    return {"gemm_per_token": per_token, "gemm_terms_per_token": f,
            "gemm_per_step": per_token * c.tokens_per_step,
            "attention_per_step": (attention + (attention / 3 if c.activation_checkpointing else 0))
            * c.tokens_per_step,
            "model_per_step": (per_token - f["recompute"] + attention) * c.tokens_per_step}


# ---------------------------------------------------------------- the child: one configuration

class Instrument:
    """The record_function ranges the analysis reads, set up for the profiled steps only (and removed after):
    step ranges, phase ranges (the Trainer's methods wrapped on the instance), region ranges (module forwards
    and the loss function wrapped on the instance)."""

    def __init__(self, trainer, model, record_function):
        self.trainer, self.model, self.rf = trainer, model, record_function
        self.undo: list = []
        self.step = None
        self.current = None
        self.missing: list[str] = []

    def _open(self, name):
        r = self.rf(name)
        r.__enter__()
        return r

    def phase(self, name: str | None) -> None:
        if self.current is not None:
            self.current.__exit__(None, None, None)
            self.current = None
        if name is not None and self.step is not None:
            self.current = self._open(f"{ANN}phase:{name}")

    def begin_step(self, label: str) -> None:
        self.step = self._open(f"{ANN}step:{label}")
        self.phase("other")

    def end_step(self) -> None:
        self.phase(None)
        if self.step is not None:
            self.step.__exit__(None, None, None)
            self.step = None

    def _replace(self, obj, attr: str, value) -> None:
        self.undo.append((obj, attr, attr in vars(obj), vars(obj).get(attr)))
        setattr(obj, attr, value)

    def _wrap_phase(self, obj, attr: str, phase: str) -> None:
        original = getattr(obj, attr, None)
        if original is None:
            self.missing.append(f"{type(obj).__name__}.{attr}")
            return

        def wrapped(*args, **kwargs):
            self.phase(phase)
            try:
                return original(*args, **kwargs)
            finally:
                self.phase("other")
        self._replace(obj, attr, wrapped)

    def _wrap_region(self, obj, attr: str, tag: str) -> None:
        original, rf = getattr(obj, attr), self.rf

        def wrapped(*args, **kwargs):
            with rf(f"{ANN}region:{tag}"):
                return original(*args, **kwargs)
        self._replace(obj, attr, wrapped)

    def install(self, regions: bool = True) -> dict:
        """Phase ranges, and (regions) region ranges. Under torch.compile no regions: the modules and the loss
        run inside the compiled graph, whose fused kernels span them, and replacing their methods would make
        dynamo recompile in the profiled steps."""
        t = self.trainer
        self._wrap_phase(t, "compute_loss", "forward")
        self._wrap_phase(t.accelerator, "backward", "backward")
        self._wrap_phase(t.accelerator, "clip_grad_norm_", "clip_grad")
        tags: dict[str, int] = {}
        if not regions:
            return tags
        for name, m in self.model.named_modules():
            tag = region_tag(name, type(m).__name__, hasattr(m, "base_layer") and hasattr(m, "lora_A"))
            if tag:
                self._wrap_region(m, "forward", tag)
                tags[tag] = tags.get(tag, 0) + 1
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        if hasattr(base, "loss_function"):
            original, rf = base.loss_function, self.rf
            had = "_loss_function" in vars(base)

            def loss(*args, **kwargs):
                with rf(f"{ANN}region:loss"):
                    return original(*args, **kwargs)
            base.loss_function = loss                       # transformers' setter: base._loss_function
            self.undo.append((base, "_loss_function", had, original if had else None))
            tags["loss"] = 1
        else:
            self.missing.append("loss_function")
        return tags

    def remove(self) -> None:
        self.end_step()
        for obj, attr, had, value in reversed(self.undo):
            if had:
                setattr(obj, attr, value)
            else:
                delattr(obj, attr)
        self.undo.clear()


def run_profile(c: mt.Config, steps: tuple[int, int, int, int], result_path: str, gpu=None,
                require_gpu: bool = False) -> None:
    """Build and train one configuration as measure_training.py does, profile its last steps, write the
    profile to result_path (JSON)."""
    import torch
    from torch.autograd.profiler import record_function
    from transformers import TrainerCallback

    warmup, timed, profiler_warmup, profiled = steps
    total = warmup + timed + profiler_warmup + profiled
    result: dict = {"status": "started", "steps": dict(zip(("warmup", "timed", "profiler_warmup", "profiled"), steps))}

    def write():
        Path(result_path).write_text(json.dumps(result, indent=1, default=str))

    gpu, dev, mem = mt.open_device(gpu, require_gpu, result)
    result["memory"] = mem
    write()
    model = mt.build_model(c, dev)
    result["model"] = mt.describe_model(model, c)
    flops = model_flops(model, c)
    result["flops"] = flops
    sync = gpu.synchronize if gpu else (lambda: None)
    seconds: list[float] = []
    compiled: list[bool] = []       # compile: true: whether each step compiled something
    clock: dict = {"last": None}
    held: dict = {}

    class Drive(TrainerCallback):
        """Times each step (synchronised at its end), starts the profiler after the timed steps, marks the
        profiled steps and the optimizer phase, stops after the last."""

        def on_step_begin(self, args, state, control, **kw):
            if clock["last"] is None:
                sync()
                clock["last"] = time.perf_counter()

        def on_pre_optimizer_step(self, args, state, control, **kw):
            instrument.phase("optimizer")

        def on_optimizer_step(self, args, state, control, **kw):
            instrument.phase("other")

        def on_step_end(self, args, state, control, **kw):
            instrument.phase(None)
            sync()
            now = time.perf_counter()
            seconds.append(now - clock["last"])
            if c.compile:
                events = mt.compile_events()
                compiled.append(events > held.get("events", 0))
                held["events"] = events
            clock["last"] = now
            k = state.global_step
            instrument.end_step()
            if k == warmup + timed:
                activities = [torch.profiler.ProfilerActivity.CPU]
                if gpu:
                    activities.append(torch.profiler.ProfilerActivity.CUDA)
                held["profiler"] = torch.profiler.profile(activities=activities, with_flops=True)
                held["profiler"].start()
                result["regions_tagged"] = instrument.install(regions=not c.compile)
            if "profiler" in held and k < total:
                instrument.begin_step(str(k + 1))
            if k >= total and "profiler" in held:
                instrument.remove()
                t = time.perf_counter()
                held["profiler"].stop()
                result["profiler_stop_s"] = round(time.perf_counter() - t, 2)
                control.should_training_stop = True

    trainer = mt.build_trainer(c, model, dev, total, [Drive()])
    instrument = Instrument(trainer, model, record_function)
    result["trainer"] = mt.describe_trainer(trainer)
    if c.compile:
        held["events"] = mt.compile_events()
    write()
    start = time.perf_counter()
    try:
        trainer.train()
        result["status"] = "ok"
    finally:
        if instrument.undo:
            instrument.remove()
        result["train_seconds"] = round(time.perf_counter() - start, 2)
    mt.describe_optimizer(trainer, model, result["trainer"])
    result["instrument_missing"] = instrument.missing
    result["step_seconds"] = [round(s, 6) for s in seconds]
    if c.compile:       # the timed steps stand in for measure_training.py's (a step that compiled: steps_compiling)
        result["compile"] = mt.describe_compile([{"seconds": s, "compiled": f} for s, f in
                                                 zip(seconds[:warmup + timed], compiled)], warmup)
        result["compile"]["steps_compiling"] = [i + 1 for i, f in enumerate(compiled) if f]
    unprofiled = sorted(seconds[warmup:warmup + timed])
    result["unprofiled_step_ms"] = round(1e3 * unprofiled[len(unprofiled) // 2], 3) if unprofiled else None
    result["profiled_step_ms"] = [round(1e3 * s, 3) for s in seconds[warmup + timed + profiler_warmup:]]
    write()

    t = time.perf_counter()
    ops, runtime, device, activities = read_events(held["profiler"].profiler.kineto_results.events(),
                                                   torch.autograd.DeviceType.CPU)
    del held["profiler"]
    read_s = time.perf_counter() - t
    analysed = [str(k) for k in range(total - profiled + 1, total + 1)]
    on_gpu = bool(gpu) and bool(device)         # without CUDA events (CUPTI refused): the CPU ops' view
    if gpu and not device:
        result["cuda_events_missing"] = True
    profile = analyse(ops, runtime, device, analysed, on_gpu, mt.H100_PEAK if on_gpu else None, flops)
    profile["activity_types"] = activities
    profile["read_events_s"] = round(read_s, 2)
    profile["analyse_s"] = round(time.perf_counter() - t - read_s, 2)
    step_ms = result["unprofiled_step_ms"] or profile.get("step_ms")
    if step_ms and "busy_ms" in profile:
        profile["unprofiled_step_ms"] = step_ms
        profile["busy_pct_of_unprofiled_step"] = round(100 * profile["busy_ms"] / step_ms, 2)
        profile["profiler_slowdown"] = round(profile["step_ms"] / step_ms, 3)
        profile["model_flops_per_s"] = flops["model_per_step"] / (step_ms / 1e3)
        profile["mfu"] = profile["model_flops_per_s"] / mt.H100_PEAK if on_gpu else None
        profile["tokens_per_second"] = c.tokens_per_step / (step_ms / 1e3)
    result["profile"] = profile
    write()


# ---------------------------------------------------------------- the parent

def estimated_seconds(c: mt.Config, steps) -> float:
    """The child's expected wall time: start, compile (compile: true; as if the cache were cold), unprofiled
    steps, profiled steps (slower), the analysis."""
    warmup, timed, profiler_warmup, profiled = steps
    step = mt.estimated_step_seconds(c)
    return (mt.START_SECONDS * (1.5 if mt.parameters(c.shape) > 5e9 else 1.0) + mt.compile_seconds(c)
            + (warmup + timed) * step + (profiler_warmup + profiled) * step * PROFILED_SLOWDOWN + ANALYSIS_SECONDS)


def summary_values(run: dict) -> dict | None:
    """The line's figures: step ms (unprofiled), profiled step ms, and shares of the unprofiled step."""
    p = run.get("profile") or {}
    step = p.get("unprofiled_step_ms")
    cats = p.get("categories") or {}
    if not step or not cats:
        return None

    def share(*names):
        return 100 * sum((cats.get(n) or {}).get("ms", 0) for n in names) / step
    named = ("gemm", "attention", "loss", "elementwise", "norm", "optimizer", "grad_clip")
    return {"step_ms": step, "profiled_ms": p.get("step_ms"), "busy": p.get("busy_pct_of_unprofiled_step"),
            "gemm": share("gemm"), "attention": share("attention"), "loss": share("loss"),
            "elementwise_norm": share("elementwise", "norm"), "optimizer": share("optimizer", "grad_clip"),
            "rest": share(*(c for c in CATEGORIES if c not in named)),
            "gemm_tflops": (p.get("gemm") or {}).get("flops_per_s_profiler")}


HEADER = (f"{'id':26s} {'status':8s} {'step_ms':>8s} {'prof_ms':>8s} {'busy%':>6s} {'gemm%':>6s} {'attn%':>6s} "
          f"{'loss%':>6s} {'elt+nrm%':>8s} {'opt+clip%':>9s} {'rest%':>6s} {'GEMM TF/s':>9s}")


def summary_line(run: dict) -> str:
    v = summary_values(run)
    head = f"{run['id']:26s} {run['status']:8s}"
    if v is None:
        return f"{head} {'-':>8s}  {run.get('error', '')[:80]}"
    tf = f"{v['gemm_tflops'] / 1e12:9.1f}" if v["gemm_tflops"] else f"{'-':>9s}"
    return (f"{head} {v['step_ms']:8.1f} {v['profiled_ms'] or 0:8.1f} {v['busy'] or 0:6.1f} {v['gemm']:6.1f} "
            f"{v['attention']:6.1f} {v['loss']:6.1f} {v['elementwise_norm']:8.1f} {v['optimizer']:9.1f} "
            f"{v['rest']:6.1f} {tf}")


def self_test() -> int:
    """The classification rules on kernel names as the CUDA profiler reports them, and the interval sums."""
    cases = {
        "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNT": "gemm",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
        "kernel__5x_cublas": "gemm",
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(Params)": "gemm",
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float>(...)": "gemm",
        "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>(...)":
            "attention",
        "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>::Params)":
            "attention",
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0": "attention",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(...)": "loss",
        "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(...)":
            "loss",
        "void at::native::vectorized_elementwise_kernel<4, at::native::silu_kernel(...)::{lambda(float)#1}, "
        "std::array<char*, 2ul> >(int, ...)": "elementwise",
        "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(...)>(...)": "elementwise",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, "
        "float, float>, unsigned int, float, 4> >(...)": "reduction",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
        "FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, "
        "(at::native::ADAM_MODE)1, false>, ...>(...)": "optimizer",
        "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, "
        "true>(...)": "index",
        "void at::native::(anonymous namespace)::CatArrayBatchedCopy<...>(...)": "elementwise",
        "aten::mm": "gemm", "aten::addmm": "gemm", "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
        "aten::_log_softmax": "loss", "aten::nll_loss_forward": "loss", "aten::_fused_adamw_": "optimizer",
        "aten::mul": "elementwise", "aten::mean": "reduction", "aten::embedding_dense_backward": "index",
        "aten::_to_copy": "elementwise", "aten::view": None,
        "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_3": "elementwise",
        "triton_per_fused__log_softmax__to_copy_nll_loss_forward_0": "loss", "triton_red_fused_sum_2": "elementwise",
        "triton_poi_fused_embedding_0": "index",
    }
    failures = [f"{name[:70]}: {category_by_name(name)} (want {want})" for name, want in cases.items()
                if category_by_name(name) != want]
    checks = [
        (categorise("memcpy", "Memcpy DtoD (Device -> Device)", "aten::copy_", "forward", None), "memcpy"),
        (categorise("kernel", "void at::native::vectorized_elementwise_kernel<4, MulFunctor>", "aten::mul",
                    "forward", "norm"), "norm"),
        (categorise("kernel", "nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "aten::mm", "forward", "norm"), "gemm"),
        (categorise("kernel", "void at::native::unrolled_elementwise_kernel<copy>", "aten::_to_copy", "backward",
                    "loss"), "loss"),
        (categorise("kernel", "multi_tensor_apply_kernel<LpNormFunctor>", "aten::_foreach_norm", "clip_grad",
                    None), "grad_clip"),
        (categorise("kernel", "triton_poi_fused_0", "aten::silu", "forward", "mlp"), "elementwise"),
        (categorise("kernel", "some_unknown_kernel", None, "other", None), "other"),
        (region_tag("base_model.model.model.layers.3.self_attn.q_proj", "Linear", True), "lora"),
        (region_tag("base_model.model.model.layers.3.self_attn.q_proj.base_layer", "Linear", False), "attention"),
        (region_tag("base_model.model.model.layers.3.mlp.down_proj.base_layer", "Linear", False), "mlp"),
        (region_tag("model.layers.3.input_layernorm", "LlamaRMSNorm", False), "norm"),
        (region_tag("model.layers.3", "LlamaDecoderLayer", False), "layer"),
        (region_tag("model.layers.3.self_attn.q_proj", "Linear", False), None),
        (region_tag("lm_head", "Linear", False), "lm_head"),
        (union([(5, 7), (0, 2), (1, 3), (6, 9)]), [(0, 3), (5, 9)]),
        (gaps([(0, 3), (5, 9)], 1, 12), [(3, 5), (9, 12)]),
        (overlap_by_label([(3, 5), (9, 12)], [(0, 4, "forward"), (4, 10, "backward")], "other"),
         {"forward": 1, "backward": 2, "other": 2}),
    ]
    checks += synthetic_trace_checks()
    failures += [f"check {i}: got {got!r}, want {want!r}" for i, (got, want) in enumerate(checks) if got != want]
    for line in failures:
        print(line)
    print(f"self-test: {len(cases) + len(checks) - len(failures)} of {len(cases) + len(checks)} passed")
    return 1 if failures else 0


def synthetic_trace_checks() -> list[tuple]:
    """analyse() on a hand-made GPU trace of one 100 ms step (times in ms × 10⁶ = ns): a forward GEMM in an MLP
    region, its backward on the autograd thread (found through the node's sequence number), a fused AdamW
    kernel, two overlapping kernels, a host sync."""
    ms = 1_000_000

    def op(name, a, b, corr, thread=1, fwd_thread=0, seq=-1, flops=0):
        return Op(name, a * ms, b * ms, thread, fwd_thread, seq, corr, flops, name.startswith(ANN))
    ops = [op(ANN + "step:1", 0, 100, 100), op(ANN + "phase:forward", 0, 40, 101),
           op(ANN + "region:mlp", 2, 20, 102), op("aten::mm", 5, 8, 1, seq=7, flops=1000),
           op("aten::mul", 9, 10, 4, seq=8), op(ANN + "phase:backward", 40, 90, 103),
           op(EVALUATE + "MmBackward0", 45, 48, 104, thread=2, fwd_thread=1, seq=7),
           op("aten::mm", 46, 47, 2, thread=2, flops=2000), op(ANN + "phase:optimizer", 90, 95, 105),
           op("aten::_fused_adamw_", 91, 92, 3), op(ANN + "phase:other", 95, 100, 106)]
    device = [("kernel", "nvjet_tst_a", 10 * ms, 30 * ms, 1), ("kernel", "vectorized_elementwise_kernel<mul>",
               25 * ms, 32 * ms, 4), ("kernel", "nvjet_tst_b", 50 * ms, 70 * ms, 2),
              ("kernel", "FusedAdamMathFunctor", 92 * ms, 94 * ms, 3)]
    runtime = [("cudaLaunchKernel", 6 * ms, 7 * ms, 1), ("cudaStreamSynchronize", 96 * ms, 99 * ms, 0)]
    p = analyse(ops, runtime, device, ["1"], True, 1e6, {"gemm_per_step": 3000})

    class Event:
        """A stand-in for torch's _KinetoEvent: each method read_events calls returns its field."""
        DEFAULTS = {"linked_correlation_id": 0, "is_user_annotation": False, "start_ns": 10, "duration_ns": 5,
                    "is_async": False, "start_thread_id": 1, "end_thread_id": 1, "fwd_thread_id": 0,
                    "sequence_nr": -1, "correlation_id": 9, "flops": 64}

        def __init__(self, device_type, activity_type, name, **fields):
            self.fields = {**self.DEFAULTS, "device_type": device_type, "activity_type": activity_type,
                           "name": name, **fields}

        def __getattr__(self, method):
            return lambda: self.fields[method]
    events = [Event("CPU", "cpu_op", "aten::mm"),
              Event("CPU", "user_annotation", ANN + "step:1", is_user_annotation=True),
              Event("CPU", "cuda_runtime", "cudaLaunchKernel", linked_correlation_id=9),
              Event("CPU", "overhead", "CUPTI"),
              Event("CUDA", "kernel", "nvjet_tst", linked_correlation_id=9),
              Event("CUDA", "gpu_memcpy", "Memcpy HtoD", linked_correlation_id=9),
              Event("CUDA", "gpu_user_annotation", ANN + "step:1", is_user_annotation=True),
              Event("CUDA", "cuda_sync", "Stream Sync")]
    read = read_events(events, "CPU")
    return [
        ([(o.name, o.flops, o.annotation) for o in read[0]], [("aten::mm", 64, False), (ANN + "step:1", 0, True)]),
        ([r[0] for r in read[1]], ["cudaLaunchKernel"]),
        ([(d[0], d[1], d[4]) for d in read[2]], [("kernel", "nvjet_tst", 9), ("memcpy", "Memcpy HtoD", 9)]),
        ((p["step_ms"], p["busy_ms"], p["idle_ms"], p["kernel_ms"]), (100, 44, 56, 49)),
        ({c: v["ms"] for c, v in p["categories"].items()}, {"gemm": 40, "elementwise": 7, "optimizer": 2}),
        ({r: (v["forward_ms"], v["backward_ms"]) for r, v in p["regions"].items()}, {"mlp": (27, 20)}),
        ({ph: (v["kernel_ms"], v["gpu_idle_ms"], v["cpu_ms"]) for ph, v in p["phases"].items()},
         {"forward": (27, 18, 40), "backward": (20, 30, 50), "optimizer": (2, 3, 5), "other": (0, 5, 5)}),
        ((p["gemm"]["flops_profiler"], p["gemm"]["flops_per_s_profiler"]), (3000, 75000)),
        ((p["host"]["launches"], p["host"]["syncs"], p["host"]["sync_sites"][0]["name"]), (1, 1, "other: ?")),
        (p["top_kernels"][0]["name"], "nvjet_tst_a"),
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="folder for profile.json and profile.log")
    mt.harness_arguments(ap, budget_s=200.0)
    ap.add_argument("--self-test", action="store_true", help="check the classification rules and exit")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.out:
        ap.error("--out is required")
    steps = (1, 2, 1, 2) if args.tiny else (WARMUP_STEPS, TIMED_STEPS, PROFILER_WARMUP, PROFILED_STEPS)
    header = (f"\n(percentages of the unprofiled step; busy = union of GPU kernels; rest = reduction, index, "
              f"memcpy, memset, other)\n{HEADER}")
    return mt.run_harness(args, "benchmarks/device/profile_training.py", steps,
                          ("warmup", "timed", "profiler_warmup", "profiled"), estimated_seconds, run_profile,
                          "profile.json", "profile.log", summary_line, header,
                          extra={"categories": CATEGORIES, "name_rules": NAME_RULES})


if __name__ == "__main__":
    sys.exit(main())
