"""Batch inference: a set of requests run through one or more replicas as fast as they go.

The model, on the replica, prefill and decode step of inference.py: continuous batching at the
largest batch the KV pool and the engine allow; each request reserves input + output tokens
(TensorRT-LLM's GUARANTEED_NO_EVICT scheduler); the mean sequence holds input + output/2 tokens;
prefill of every prompt + decode steps of the batch: runtime = requests·prefill +
requests·output/batch·step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..notes import Note, note
from .inference import InferenceError, Prefill, Replica, Step, concurrency_limit, decode_step, mean_context, prefill
from .lengths import Spread


@dataclass(frozen=True)
class BatchJob:
    requests: int                   # of one replica
    input_tokens: int
    output_tokens: int
    replicas: int
    batch: int                      # sequences decoded at once per replica
    prefill: Prefill                # one prompt (batch 1)
    step: Step                      # a decode step at `batch` and the mean context
    prefill_seconds: float          # all prompts of one replica
    decode_seconds: float
    runtime_seconds: float          # wall clock (replicas in parallel)
    notes: tuple[Note, ...] = ()
    prefill_passes: int = 0         # passes the prompts are packed into (each pays its launches once)

    @property
    def prefill_read_bound(self) -> bool:   # the passes' weight reads outlast the prompts' FLOPs: charged
        return self.prefill_passes * self.prefill.read_seconds > self.requests * self.prefill.flops_seconds

    @property
    def output_tokens_per_second(self) -> float:
        """All replicas together (CONTRACT: tokens_per_second of batch inference)."""
        return self.requests * self.replicas * self.output_tokens / self.runtime_seconds

    @property
    def prefill_tokens_per_second(self) -> float:
        """Prompt tokens per second of one replica while prefilling (prompts packed into passes)."""
        return self.requests * self.input_tokens / self.prefill_seconds

    @property
    def ttft_seconds(self) -> float:
        return self.prefill.seconds

    @property
    def tpot_seconds(self) -> float:
        return self.step.seconds


def batch_job(rep: Replica, requests: int, input_tokens: int, output_tokens: int, replicas: int = 1,
              batch: int | None = None, spread: Spread | None = None) -> BatchJob:
    """`requests` prompts of `input_tokens`, each generating `output_tokens`, split over `replicas`.

    batch: at most this many sequences at once (None: what the KV pool and the engine allow).
    The GPU's time is the prefill of every prompt plus the decode steps: runtime =
    requests × prefill(input) + requests × output / batch × step(batch, input + output/2), the prefill
    at its compute (prompts are packed into passes of the engine's prefill chunk), and no less than one
    read of the weights per pass, plus each pass's launches (Prefill.launch_seconds).
    Engines overlap part of the prefill with decode steps (chunked prefill, in-flight batching),
    but against TensorRT-LLM's measurements the sum fits better than a model in which prompt
    tokens ride free in memory-bound steps (benchmarks/calibrate_inference.py, both compared)."""
    if requests < 1 or replicas < 1:
        raise ValueError("requests and replicas must be positive")
    if spread is not None:
        return _spread_job(rep, requests, input_tokens, output_tokens, replicas, batch, spread)
    per_replica = math.ceil(requests / replicas)
    most = concurrency_limit(rep, input_tokens, output_tokens)
    if batch is not None and batch > most:
        raise InferenceError(f"batch {batch}: {rep.engine.name} holds at most {most} sequences of "
                             f"{input_tokens + output_tokens:,} tokens on {rep.tensor_parallel} × {rep.gpu.id}",
                             achievable=most)
    batch = min(batch or most, per_replica)
    one = prefill(rep, input_tokens)
    step = decode_step(rep, batch, mean_context(input_tokens, output_tokens))
    # Prompts share passes of up to the engine's prefill chunk (chunked prefill, in-flight batching): each
    # is charged its compute, and each pass at least one read of the weights.
    passes = math.ceil(per_replica * input_tokens / rep.engine.prefill_chunk)
    prefill_seconds = (per_replica * one.allreduce_seconds + passes * one.launch_seconds
                       + max(per_replica * one.flops_seconds, passes * one.read_seconds))
    decode_seconds = per_replica * output_tokens / batch * step.seconds
    notes = (note("batch-kv-pool", batch=batch, kv_tokens=rep.kv_tokens,
                  sequences=rep.kv_tokens // (input_tokens + output_tokens), input_tokens=input_tokens,
                  output_tokens=output_tokens, engine=rep.engine.name, max_batch=rep.max_batch),)
    return BatchJob(requests=per_replica, input_tokens=input_tokens, output_tokens=output_tokens,
                    replicas=replicas, batch=batch, prefill=one, step=step, prefill_seconds=prefill_seconds,
                    decode_seconds=decode_seconds, runtime_seconds=prefill_seconds + decode_seconds,
                    notes=rep.notes + notes, prefill_passes=passes)



def _spread_job(rep: Replica, requests: int, input_tokens: int, output_tokens: int, replicas: int,
                batch: int | None, spread: Spread) -> BatchJob:
    """batch_job over lengths that vary (lengths.py: the slots' length-biased context, the prefill's mean over the
    prompts, and the drain once no request is left to start). input_tokens and output_tokens are the means."""
    per_replica = math.ceil(requests / replicas)
    held_input, held_output = math.ceil(spread.mean_input), math.ceil(spread.held_output)
    # The longest requests must fit at all (the KV pool), within the model's context (a tail the model cannot hold is
    # cut at it); the slots hold the length-biased one.
    window = rep.model.max_context or math.inf
    longest_in = min(math.ceil(max(spread.inputs)), window - 1)
    room = window - longest_in
    concurrency_limit(rep, longest_in, min(math.ceil(max(spread.outputs)), room))
    most = concurrency_limit(rep, held_input, held_output)
    if batch is not None and batch > most:
        raise InferenceError(f"batch {batch}: {rep.engine.name} holds at most {most} sequences of "
                             f"{held_input + held_output:,} tokens (a slot's mean, the outputs length-biased) on "
                             f"{rep.tensor_parallel} × {rep.gpu.id}", achievable=most)
    batch = min(batch or most, per_replica)
    context = math.ceil(spread.held_context)
    # Prefill: each prompt's compute at its own length (attention grows with its square), packed into passes.
    by_length = {i: prefill(rep, math.ceil(i)) for i in set(spread.inputs)}
    flops = sum(by_length[i].flops_seconds for i in spread.inputs) / len(spread.inputs)
    allreduce = sum(by_length[i].allreduce_seconds for i in spread.inputs) / len(spread.inputs)
    one = prefill(rep, input_tokens)
    passes = math.ceil(per_replica * spread.mean_input / rep.engine.prefill_chunk)
    prefill_seconds = (per_replica * allreduce + passes * one.launch_seconds
                       + max(per_replica * flops, passes * one.read_seconds))
    # Decode: the full batch while requests wait to start, then the drain.
    step = decode_step(rep, batch, context)
    tokens = per_replica * spread.mean_output
    if per_replica > batch:     # the running sequences' residual lives; the longest sets the end
        drain_steps = spread.longest_residual(batch)
        drain_tokens = batch * spread.held_output / 2
    else:                       # all started together: the longest output sets the end
        drain_steps = spread.longest_output(per_replica)
        drain_tokens = tokens
    drain_batch = max(1, min(batch, round(drain_tokens / drain_steps)))
    decode_seconds = ((tokens - drain_tokens) / batch * step.seconds
                      + drain_steps * decode_step(rep, drain_batch, context).seconds)
    notes = (note("batch-kv-pool", batch=batch, kv_tokens=rep.kv_tokens,
                  sequences=rep.kv_tokens // (held_input + held_output), input_tokens=held_input,
                  output_tokens=held_output, engine=rep.engine.name, max_batch=rep.max_batch),
             note("batch-length-spread", input_tokens=input_tokens, output_tokens=output_tokens,
                  held_output=round(spread.held_output), held_context=context, drain_steps=round(drain_steps),
                  drain_batch=drain_batch, drain_share=round(drain_steps * decode_step(rep, drain_batch, context).seconds
                                                             / (prefill_seconds + decode_seconds), 4)))
    return BatchJob(requests=per_replica, input_tokens=input_tokens, output_tokens=output_tokens,
                    replicas=replicas, batch=batch, prefill=one, step=step, prefill_seconds=prefill_seconds,
                    decode_seconds=decode_seconds, runtime_seconds=prefill_seconds + decode_seconds,
                    notes=rep.notes + notes, prefill_passes=passes)
