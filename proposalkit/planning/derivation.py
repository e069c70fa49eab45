"""An inference workload's arithmetic written out, line by line: what the plan's InferencePlan.steps
and the report's derivation print (the KV pool, the prefill, the decode step, a batch job's prefill,
a service's pool and tail TTFT). inference.py computes; this module only writes the numbers out.
"""

from __future__ import annotations

from ..estimate.inference import Replica, prefill, prefill_attention_flops, prefill_flops_per_sequence
from ..estimate.queueing import EXACT_TERMS
from ..estimate.step_time import LINK_FRACTION, MAMF_FRACTION, matmul_fraction
from ..units import GiB, SECONDS_PER_HOUR, ms_number, ms_text

def mfu_text(x: float) -> str:
    """An MFU as the report writes it (render/words.py _mfu): three decimals, two when the third is zero."""
    return f"{x:.3f}".removesuffix("0")


def duration_text(seconds: float) -> str:
    return f"{seconds / SECONDS_PER_HOUR:,.2f} h" if seconds >= 360 else f"{seconds:,.3g} s"


def kv_line(rep: Replica, input_tokens: int, output_tokens: int | None, most: int) -> tuple[str, str]:
    """The KV pool ÷ one sequence's KV cache: how many sequences a replica holds at once."""
    m, t, e = rep.model, rep.tensor_parallel, rep.engine
    context = input_tokens + (output_tokens or 0)
    gpus = f" per GPU ({t} GPUs, tensor parallel)" if t > 1 else ""
    cap = f", capped at {e.name}'s {rep.max_batch}" if rep.max_batch is not None and most == rep.max_batch else ""
    per_sequence = rep.kv_bytes_per_sequence(context)
    if not cap and most < min(rep.kv_pool_bytes // per_sequence, rep.max_batch or most + 1):
        cap = f", capped at the workload's batch {most:,}"
    if per_sequence == context * rep.kv_bytes_per_token:
        fits = f"{rep.kv_tokens // context:,} sequences of {context:,} tokens"
    else:   # sliding-window layers keep only the window (estimate/weights.kv_layer_tokens)
        return ("KV cache", f"{rep.kv_bytes_per_token:,} B per token{gpus} ({m.layers} layers, {rep.kv_precision}); "
                            f"a sequence of {context:,} tokens holds {per_sequence:,} B ({m.sliding_window_layers} of "
                            f"{m.layers} layers keep only {m.sliding_window:,} tokens); {e.name}'s pool "
                            f"{rep.kv_pool_bytes / GiB:,.2f} GiB ÷ {per_sequence:,} B = "
                            f"{rep.kv_pool_bytes // per_sequence:,} sequences{cap}: at most {most:,} at once")
    return ("KV cache", f"{rep.kv_bytes_per_token:,} B per token{gpus} ({m.layers} layers, {rep.kv_precision}); "
                        f"{e.name}'s pool {rep.kv_pool_bytes / GiB:,.2f} GiB ÷ {rep.kv_bytes_per_token:,} B = "
                        f"{rep.kv_tokens:,} tokens = {fits}{cap}: at most {most:,} at once")


def prefill_line(rep: Replica, input_tokens: int) -> tuple[str, str]:
    """A prompt's prefill: its compute (a packed pass's share) and its wall time alone (inference.prefill())."""
    m, t = rep.model, rep.tensor_parallel
    lone = prefill(rep, input_tokens)
    flops = prefill_flops_per_sequence(m, input_tokens)
    compute, link = lone.flops_seconds, lone.allreduce_seconds
    split = f" ÷ {t} GPUs" if t > 1 else ""
    p = lone.passes
    times = f"{p} × " if p > 1 else ""
    longer = (f"{'one read' if p == 1 else 'a read'} of the weights{' per pass' if p > 1 else ''}, "
              f"{times}{ms_text(lone.read_seconds)} (longer than its compute)"
              if p * lone.read_seconds > compute else ms_text(compute))
    where = ("a lone prompt's pass" if p == 1 else
             f"a lone prompt's {p} passes of ≤ {rep.engine.prefill_chunk:,} tokens")
    floor = (f"; {where}: {longer}" + (f" + {ms_text(link)} all-reduce" if t > 1 else "")
             + f" + {times}{m.layers} layers × {rep.engine.prefill_layer_seconds * 1e6:g} µs of kernel launches = "
             f"{ms_text(lone.seconds)}")
    across = (f" across {rep.nodes} nodes at {rep.link_bandwidth / 1e9:g} GB/s per GPU ({rep.node_gpus} "
              f"GPU{'s' if rep.node_gpus > 1 else ''} per node)" if rep.nodes > 1 else "")
    total = (f"{ms_text(compute)} + {ms_text(link)} all-reduce{across} = {ms_text(lone.compute_seconds)}" if t > 1
             else ms_text(lone.compute_seconds))
    rate = f"({rep.peak_flops / 1e12:,.0f} TFLOP/s {rep.compute_precision} × {rep.compute_fraction:g})"
    if rep.compute_precision == "fp8" and rep.engine.context_attention_16bit:     # an fp16 context FMHA (Engine)
        attention = prefill_attention_flops(m, input_tokens)
        e = rep.engine
        work = (f"{(flops - attention) / 1e12:,.2f} TFLOP of GEMMs per prompt of {input_tokens:,} tokens (2·P·s){split} "
                f"÷ {rate} + {attention / 1e12:,.2f} TFLOP of attention (2·L·s²·a·d){split} ÷ "
                f"({rep.gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s 16-bit × {e.compute_fraction_16bit:g}: "
                f"{e.name} {e.release}'s context FMHA runs in fp16)")
    else:
        work = f"{flops / 1e12:,.2f} TFLOP per prompt of {input_tokens:,} tokens (2·P·s + 2·L·s²·a·d){split} ÷ {rate}"
    return ("Prefill", f"{work} = {total}{floor}: {input_tokens:,} ÷ {ms_text(lone.seconds)} = "
                       f"{lone.tokens_per_second:,.0f} prompt tokens/s alone")


def batch_prefill_text(rep: Replica, job) -> str:
    """The batch job's prefill (estimate/batch.py batch_job): every prompt's compute, the prompts packed
    into passes of the engine's chunk, each pass at least one read of the weights and its launches."""
    one, n, p = job.prefill, job.requests, job.prefill_passes
    compute = one.flops_seconds
    passes = f"{p:,} pass{'es' * (p != 1)} of ≤ {rep.engine.prefill_chunk:,} tokens"
    body = f"{n:,} prompt{'s' * (n != 1)} × {ms_text(one.compute_seconds)} + {passes} × {ms_text(one.launch_seconds)} of launches"
    if job.prefill_read_bound:                 # each pass at least one read of the weights
        body = ((f"{n:,} × {ms_text(one.allreduce_seconds)} all-reduce + " if rep.tensor_parallel > 1 else "")
                + f"{passes} × ({ms_text(one.read_seconds)} one read of the weights, longer than {n:,} × {ms_text(compute)} "
                f"compute, + {ms_text(one.launch_seconds)} of launches)")
    return f"prefill {body} = {duration_text(job.prefill_seconds)} ({job.prefill_tokens_per_second:,.0f} prompt tokens/s)"


def step_line(rep: Replica, step, label: str) -> tuple[str, str]:
    """A decode step: the bytes it reads ÷ the achieved bandwidth, operator by operator (the weights'
    matrix multiplies, then attention over the KV cache), each the longer of memory and compute time."""
    achieved = rep.achieved_bandwidth
    kv, weights = step.kv_bytes_read, step.weights_bytes_read
    per_sequence = rep.kv_bytes_per_sequence(step.context)
    if per_sequence == step.context * rep.kv_bytes_per_token:
        kv_text = f"{step.batch:,} × {step.context:,} × {rep.kv_bytes_per_token:,} B"
    else:   # sliding-window layers keep only the window (estimate/weights.kv_layer_tokens)
        kv_text = (f"{step.batch:,} × {per_sequence:,} B ({rep.model.sliding_window_layers} of {rep.model.layers} "
                   f"layers keep only {rep.model.sliding_window:,} tokens)")
    weights_text = (f"{weights / GiB:,.2f} GiB weights" if weights == rep.weights_bytes else
                    f"{weights / GiB:,.2f} GiB of the {rep.weights_bytes / GiB:,.2f} GiB weights (the experts "
                    f"{step.batch:,} token{'s' if step.batch > 1 else ''} visit{'' if step.batch > 1 else 's'})")

    def part(name: str, nbytes: float, seconds: float) -> str:
        memory = nbytes / achieved
        if seconds > memory * (1 + 1e-9):
            return f"{name} {ms_text(memory)}, but their FLOPs take {ms_text(seconds)} (compute-bound)"
        return f"{name} {ms_text(seconds)}"

    fixed = rep.engine.decode_step_seconds
    comm = step.seconds - step.linear_seconds - step.attention_seconds - fixed
    text = (f"batch {step.batch:,} at {step.context:,} tokens reads {weights_text} + "
            f"{kv_text} = {kv / GiB:,.2f} GiB KV per GPU; "
            f"at {rep.gpu.memory_bandwidth / 1e12:,.3g} TB/s × {rep.engine.bandwidth_fraction:g} = "
            f"{achieved / GiB:,.1f} GiB/s: {part('weights', weights, step.linear_seconds)} + "
            f"{part('KV', kv, step.attention_seconds)}"
            + (f" + all-reduce {ms_text(comm)}" if rep.tensor_parallel > 1 else "")
            + (" (across nodes)" if rep.nodes > 1 else "")
            + (f" + {ms_text(fixed)} the engine's own per step ({rep.engine.name} {rep.engine.release})"
               if fixed else "")
            + f" = {ms_text(step.seconds)} per step")
    return label, text


def pool_text(svc, q: float, held: bool) -> str:
    """The chance that a request finds the KV pool full (serving.pool_full_probability): held to 1 − p
    under a TTFT target; without one only stated, with the wait it means when it exceeds 1 − p."""
    full, tail = svc.pool_full, 1 - q / 100
    chance = "below 1e-9" if full < 1e-9 else f"{full:.2g}"
    places = ("the pool's one place" if svc.max_concurrency == 1 else
              f"all {svc.max_concurrency:,} places of the pool")
    text = (f"in flight is Poisson about that mean (M/G/∞, Takács 1962), so a request finds {places} taken "
            f"with probability {chance}")
    if held:
        return text + f" ≤ {tail:.3g} (p{q:g})"
    if full <= tail:
        return text
    return (text + f", above {tail:.3g}: more than 1 request in {round(1 / tail):,} waits for a place, a wait the "
            f"p{q:g} TTFT below leaves out (no ttft_ms target holds the pool)")


def ttft_line(svc, rate: float, q: float) -> str:
    """The tail TTFT written out: prefill + the wait for prefills ahead (M/D/1: the exact distribution,
    or Lundberg's bound past queueing.EXACT_TERMS prefills) + one step + the running batch's ride."""
    S, step = svc.prefill.seconds, svc.step.seconds
    busy = rate * S
    head = f"p{q:g} with prompts arriving as a Poisson stream, prefilled one after another (M/D/1): "
    if svc.ttft_wait_method == "idle":
        wait = (f"a prompt waits for another's prefill with probability u = {busy:.3f} ≤ {1 - q / 100:.3g}, so "
                f"the p{q:g} wait is 0")
    elif svc.ttft_wait_method == "exact":
        wait = (f"the wait W for prefills ahead has P(W ≤ t) = (1 − u) × the sum over k = 0 … ⌊t/S⌋ of "
                f"[λ(kS − t)]^k ÷ k! × e^(−λ(kS − t)) (Erlang 1909; Crommelin 1932; Franx 2001), with "
                f"λ = {rate:,.3g}/s, S = "
                f"{S:.4g} s, u = λS = {busy:.3f}; it reaches {q / 100:.4g} at t = {svc.ttft_wait_ms:,.1f} ms "
                f"({svc.ttft_wait_ms / 1e3 / S:,.2f} prefills)")
    else:
        wait = (f"the wait for prefills ahead is past {EXACT_TERMS} prefills, where the exact M/D/1 sum is not "
                f"evaluated; it is at most −ln({1 - q / 100:.3g}) ÷ θ = {svc.ttft_wait_ms:,.1f} ms, θ = "
                f"{svc.lundberg_theta:,.3g}/s solving {rate:,.3g} × (e^(θ × {S:.4g} s) − 1) = θ (Lundberg's "
                "inequality, Asmussen & Albrecher 2010)")
    r = svc.ride
    passes = f"{r.passes} × (" if r.passes > 1 else "("
    riding = (f"{passes}{ms_text(r.attention_seconds)} attention + {ms_text(r.linear_seconds)} matrix multiplies of the "
              f"{svc.step.batch:,} running sequence{'s' if svc.step.batch > 1 else ''}) in its prefill "
              f"pass{'es' if r.passes > 1 else ''} (chunks of {svc.prefill_chunk:,} tokens)")
    return (head + wait + f"; TTFT = {ms_text(S)} prefill + {ms_number(svc.ttft_wait_ms)} ms + {ms_text(step)} decode step "
            f"under way + {riding} = {ms_number(svc.ttft_ms)} ms")


def step_text(step, gpu, fpt, fraction: float, implied_mfu: float) -> str:
    """A training step timed by its parts (estimate/step_time.py), per GPU, as the plan's derivation prints it."""
    memory = [("layers", step.layers), ("norm and loss", step.head), ("weight casts and accumulation", step.weights),
              ("optimizer step and gradient clip", step.optimizer)]
    parts = [f"matmuls {ms_text(step.compute)} ({fpt.hardware / 1e9:,.2f} GFLOP per token at {fraction:.2f} × "
             f"{gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s: {mamf_text(gpu, fraction)})",
             f"memory-bound kernels {ms_text(step.memory)} ("
             + ", ".join(f"{name} {ms_text(t)}" for name, t in memory if t > 0)
             + f", at {step.memory_fraction:.2f} × {gpu.memory_bandwidth / 1e12:,.2f} TB/s)"]
    if step.comm:
        parts.append(f"tensor-parallel collectives {ms_text(step.comm)} ({step.collectives:,} rings over "
                     f"{step.tensor_parallel} GPUs at {LINK_FRACTION:.2f} × {step.link / 1e9:,.0f} GB/s)")
    launches = f"{step.kernels:,} kernel launches × {step.host_per_kernel * 1e6:g} µs = {ms_text(step.host)}"
    if step.host_bound:
        total = f"{ms_text(step.device)} on the GPU, but the host takes longer ({launches}): {ms_text(step.seconds)}"
    else:
        total = f"{ms_text(step.seconds)} (the host keeps up: {launches})"
    return (f"step on each of {step.gpus} GPU{'s' if step.gpus > 1 else ''}: " + " + ".join(parts) + f" = {total}; "
            f"{step.tokens:,} tokens per step ÷ {ms_text(step.seconds)} = {step.tokens_per_second:,.0f} tokens/s "
            f"(MFU {mfu_text(implied_mfu)})")


def mamf_text(gpu, fraction: float) -> str:
    """Where the matmuls' share of the peak comes from: MAMF_FRACTION of the GPU's maximum achievable matmul rate
    (catalog gpus.yaml mamf_flops, Bekman's MAMF table), and any factor on top (QLoRA's dequantization)."""
    measured = ("measured" if gpu.mamf_measured else
                f"not measured: the table's lowest {gpu.vendor} efficiency, {gpu.matmul_efficiency:.1%}, taken")
    factor = fraction / matmul_fraction(gpu)
    extra = f" × {factor:.3f} for NF4 dequantization" if abs(factor - 1) > 1e-9 else ""
    return (f"{MAMF_FRACTION:.2f} of the maximum achievable matmul rate, {gpu.mamf_flops / 1e12:,.1f} TFLOP/s "
            f"({measured}; Bekman's MAMF table){extra}")


def step_summary(step, implied_mfu: float) -> str:
    """The step's rate in one line, for a report's body (step_text writes the parts out)."""
    parts = [f"matmuls {ms_text(step.compute)}", f"memory-bound kernels {ms_text(step.memory)}"]
    if step.comm:
        parts.append(f"tensor-parallel collectives {ms_text(step.comm)}")
    timed = " + ".join(parts) + (", shorter than the host's kernel launches" if step.host_bound else "")
    return (f"{step.tokens:,} tokens per step ÷ {ms_text(step.seconds)} = {step.tokens_per_second:,.0f} tokens/s "
            f"(MFU {mfu_text(implied_mfu)}); the step on each GPU: {timed}")
