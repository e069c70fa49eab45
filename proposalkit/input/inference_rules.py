"""Rules that span the fields of an inference workload: which of its three forms it takes.

- a batch job: `requests` prompts of `input_tokens` each, generating `output_tokens` each
  (or `tokens` with a measured `throughput`);
- a service sized by load: `request_rate` with `input_tokens`, `output_tokens`, `hours` kept up
  and optional latency targets `ttft_ms`, `tpot_ms`;
- a service as declared: `hours` kept up serving `batch` sequences of `context` tokens.

Each rule returns (path under the workload, message); loading.py adds file, line and field.
Targets that no GPU can meet need the estimate and are checked by the planner (planning/inference.py).
"""

from __future__ import annotations

from ..catalog.engines import ENGINE_GENERATIONS
from ..catalog.shapes import ModelSpec
from ..bounds import BOUNDS

BATCH_EXAMPLE = "requests: 200k, input_tokens: 1k, output_tokens: 256"
SERVICE_EXAMPLE = "request_rate: 5, input_tokens: 1k, output_tokens: 256, hours: 720"


def inference_problems(w, model: ModelSpec | None) -> list[tuple[tuple, str]]:
    out: list[tuple[tuple, str]] = []
    batch_job = w.requests is not None
    by_rate = w.request_rate is not None
    if batch_job and by_rate:
        out.append((("request_rate",), "a batch job (requests) and a service (request_rate) in one workload "
                                       "(expected one of them; plan the two as separate workloads)"))
    if batch_job and w.hours is not None:
        out.append((("hours",), "a batch job's runtime is computed from its requests (got hours too; expected "
                                "hours only for a service)"))
    if batch_job and w.tokens is not None:
        out.append((("tokens",), "given twice (expected requests, input_tokens and output_tokens, or tokens with "
                                 "a measured throughput, not both)"))
    if (batch_job or by_rate) and getattr(w, "pilot", None) is not None:
        # loading.py has already turned the pilot into a measured throughput: name what the user wrote.
        out.append((("pilot",), "a measured pilot applies to batch inference by tokens; a batch job by requests "
                                "or a service by request_rate is estimated (expected tokens = requests × "
                                "output_tokens with context beside the pilot, or no pilot)"))
    elif (batch_job or by_rate) and w.throughput is not None:
        out.append((("throughput",), "the rate of a batch job by requests or a service by request_rate is "
                                     "estimated (expected throughput only with tokens)"))
    if batch_job or by_rate:
        what = "a batch job of requests" if batch_job else "a service sized by request_rate"
        for name, example in (("input_tokens", "prompt tokens per request, e.g. 1k"),
                              ("output_tokens", "generated tokens per request, e.g. 256")):
            if getattr(w, name) is None:
                out.append(((name,), f"required for {what} (expected {example})"))
        if w.context is not None:
            out.append((("context",), f"given twice: {what} runs input_tokens + output_tokens per sequence "
                                      "(expected context only for a service by hours and batch)"))
    elif w.input_tokens is not None or w.output_tokens is not None:
        name = "input_tokens" if w.input_tokens is not None else "output_tokens"
        out.append(((name,), "applies to a batch job or a service sized by load (expected requests beside it, "
                             f"e.g. {BATCH_EXAMPLE}; or request_rate, e.g. {SERVICE_EXAMPLE})"))
    if by_rate and not batch_job and w.hours is None:
        out.append((("hours",), "required for a service sized by request_rate (expected the hours it is kept up, "
                                "e.g. 720 for a month)"))
    if not by_rate:
        for name in ("ttft_ms", "tpot_ms", "ttft_percentile"):
            if getattr(w, name) is not None:
                out.append(((name,), "a latency target sizes a service by its load (expected request_rate "
                                     f"beside it, e.g. {SERVICE_EXAMPLE})"))
    if not (batch_job or by_rate):
        if w.hours is None and w.tokens is None:
            out.append((("hours",), "required for inference (expected a batch job, e.g. " + BATCH_EXAMPLE
                                    + "; a service by load, e.g. " + SERVICE_EXAMPLE
                                    + "; or hours with context and batch)"))
        # Tokens without a pilot are mended by requests, which need no context.
        if w.context is None and (w.tokens is None or w.throughput is not None or getattr(w, "pilot", None)):
            out.append((("context",), "required for inference (expected tokens per sequence, e.g. 8k)"))
        if w.tokens is not None and w.throughput is None and getattr(w, "pilot", None) is None:
            # Tokens alone say nothing of how they split into prompts and answers, which sets the
            # prefill and decode time; the estimate needs the requests and their lengths.
            out.append((("tokens",), "batch inference by tokens needs a measured rate or the requests (expected "
                                     f"{BATCH_EXAMPLE} for an estimate, or throughput: {{tokens_per_second, gpu, "
                                     "gpus} from a pilot run)"))
    version = getattr(w, "engine_version", None)
    framework = getattr(w, "framework", None)
    if version in ENGINE_GENERATIONS and framework not in (None, "vllm"):
        out.append((("engine_version",), f"the engine generations v0 and v1 are vLLM's (got {version} with "
                                         f"framework {framework}; expected that engine's release, e.g. '1.0.0')"))
    out += _lengths(w, model)
    return out


def _lengths(w, model: ModelSpec | None) -> list[tuple[tuple, str]]:
    """A sequence beyond the model's context window, and a batch job beyond the token bound."""
    out = []
    if w.input_tokens is not None and w.output_tokens is not None:
        context = w.input_tokens + w.output_tokens
        if model is not None and model.max_context and context > model.max_context:
            out.append((("output_tokens",), f"input_tokens + output_tokens = {w.input_tokens:,} + "
                                            f"{w.output_tokens:,} = {context:,} tokens exceeds {model.id}'s maximum "
                                            f"context of {model.max_context:,} (expected at most "
                                            f"{model.max_context:,} tokens per request)"))
        if w.requests is not None:
            total, bound = w.requests * context, BOUNDS["tokens"]
            if total > bound.high:
                out.append((("requests",), f"implausibly large (got {w.requests:,} requests × {context:,} tokens = "
                                           f"{total:.3g} tokens, expected {bound.reason})"))
    elif w.context is not None and model is not None and model.max_context and w.context > model.max_context:
        out.append((("context",), f"{w.context:,} tokens exceeds {model.id}'s maximum context of "
                                  f"{model.max_context:,} (expected at most {model.max_context:,})"))
    return out
