"""Inference services: replicas needed to serve a request rate within latency targets.

Part of the inference API (import it from proposalkit.estimate.inference); the physics of
prefill and decode steps is in inference.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .inference import InferenceError, Prefill, Replica, Step, _batch_for, decode_step, mean_context, prefill


@dataclass(frozen=True)
class Service:
    request_rate: float
    replicas: int
    rate_per_replica: float         # request_rate / replicas
    max_rate_per_replica: float     # the most one replica sustains within the targets
    concurrency: int                # sequences in flight per replica at rate_per_replica
    max_concurrency: int            # what the KV pool and the engine allow per replica
    ttft_ms: float
    tpot_ms: float
    step: Step
    prefill: Prefill
    output_tokens_per_second: float  # per replica
    notes: tuple[str, ...] = field(default=())

def _service_point(rep: Replica, rate: float, input_tokens: int, output_tokens: int, most: int):
    """Steady state of one replica at `rate` requests/s: prefill takes a share u of the GPU's time
    (rate × one prompt's prefill); decode steps run in the rest, so TPOT = step(B)/(1 − u); the
    concurrency B follows Little's law, B = rate × (TTFT + output × TPOT), solved by iteration.
    Returns (B, TTFT s, TPOT s, step) or None when the replica cannot sustain the rate."""
    one = prefill(rep, input_tokens)
    busy = rate * one.seconds
    if busy >= 1:
        return None
    batch = 1
    for _ in range(100):
        step = decode_step(rep, batch, mean_context(input_tokens, output_tokens))
        tpot = step.seconds / (1 - busy)
        ttft = one.seconds / (1 - busy)
        need = max(1, math.ceil(rate * (ttft + output_tokens * tpot)))
        if need > most:
            return None
        if need == batch:
            return batch, ttft, tpot, step
        batch = need
    return batch, ttft, tpot, step


def service(rep: Replica, request_rate: float, input_tokens: int, output_tokens: int,
            ttft_ms: float | None = None, tpot_ms: float | None = None, batch: int | None = None) -> Service:
    """Replicas needed to serve `request_rate` requests/s within the latency targets.

    batch: at most this many sequences in flight per replica (None: what the KV pool and the engine allow)."""
    if request_rate <= 0:
        raise ValueError(f"request_rate must be positive, got {request_rate}")
    most = _batch_for(rep, input_tokens, output_tokens)
    if batch is not None:
        most = min(most, batch)
    lone = prefill(rep, input_tokens)
    first = decode_step(rep, 1, mean_context(input_tokens, output_tokens))
    if ttft_ms is not None and lone.seconds * 1e3 > ttft_ms:
        raise InferenceError(
            f"ttft_ms {ttft_ms:g}: a lone prompt of {input_tokens:,} tokens takes {lone.seconds * 1e3:.0f} ms "
            f"to prefill on {rep.tensor_parallel} × {rep.gpu.id}; more tensor-parallel GPUs or a faster GPU "
            "lower it", achievable=lone.seconds * 1e3)
    if tpot_ms is not None and first.seconds * 1e3 > tpot_ms:
        raise InferenceError(
            f"tpot_ms {tpot_ms:g}: one decode step reads {first.bytes_read / 1e9:.1f} GB per GPU, "
            f"{first.seconds * 1e3:.1f} ms at {rep.achieved_bandwidth / 1e12:.2f} TB/s on "
            f"{rep.tensor_parallel} × {rep.gpu.id} even at batch 1; more tensor-parallel GPUs or a "
            "faster GPU lower it", achievable=first.seconds * 1e3)

    def ok(rate: float):
        point = _service_point(rep, rate, input_tokens, output_tokens, most)
        if point is None:
            return None
        _, ttft, tpot, _ = point
        if ttft_ms is not None and ttft * 1e3 > ttft_ms:
            return None
        if tpot_ms is not None and tpot * 1e3 > tpot_ms:
            return None
        return point

    low, high = 0.0, 1 / lone.seconds        # prefill alone saturates the replica at 1/prefill
    for _ in range(60):
        mid = (low + high) / 2
        if ok(mid) is None:
            high = mid
        else:
            low = mid
    best = low
    if best <= 0:
        raise InferenceError("no request rate meets the targets on one replica", achievable=0.0)
    replicas = math.ceil(request_rate / best - 1e-9)
    rate = request_rate / replicas
    batch, ttft, tpot, step = ok(rate) or ok(best)
    return Service(request_rate=request_rate, replicas=replicas, rate_per_replica=rate,
                   max_rate_per_replica=best, concurrency=batch, max_concurrency=most,
                   ttft_ms=ttft * 1e3, tpot_ms=tpot * 1e3, step=step, prefill=lone,
                   output_tokens_per_second=rate * output_tokens, notes=rep.notes)
