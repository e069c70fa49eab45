"""Plausibility bounds on the numbers of a workload file and of the pilot logs it cites: the one table,
each bound with its reason. It sits below every stage, since input/ and pilot/ both check by it.

A value beyond a bound cannot be meant (a slip of the exponent or the suffix:
1e300, 2000T), would print as nonsense in a proposal, and can overflow the
arithmetic. Each bound lies far beyond anything published, so it only catches
slips; its reason is the message's "expected ..." text, so the user sees why.
Numbers outside a bound are quoted as the user wrote them (values.describe),
never with 300 digits.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """Values from `low` to `high` (both allowed); `reason` is the message's range and why, `hint` how to mend."""

    low: float
    high: float
    reason: str
    hint: str = ""

    @property
    def expected(self) -> str:
        return f"{self.reason}; {self.hint}" if self.hint else self.reason


BOUNDS = {
    # Llama 3 was pretrained on 15.6T tokens (Dubey et al. 2024).
    "tokens": Bound(1, 10**15, "at most 10^15 tokens, 64× the 15.6T Llama 3 was pretrained on",
                   "check the suffix: k, M, B, T"),
    # A sample is at least one token, so samples share the token bound.
    "samples": Bound(1, 10**15, "at most 10^15 samples", "check the suffix: k, M, B, T"),
    # The largest published models are near 2T parameters.
    "params": Bound(1, 10**14, "at most 10^14 parameters, 50× the largest published models",
                   "check the suffix: M, B, T"),
    # Context windows reach 10M tokens (Llama 4 Scout).
    "sequence": Bound(1, 10**8, "at most 10^8 tokens per sequence, 10× the longest published context window"),
    # The largest GPU clusters hold about 10^5 GPUs.
    "gpus": Bound(1, 10**6, "at most 10^6 GPUs, 10× the largest clusters"),
    # A service kept up for a decade is a slip (a request longer than its allocation
    # period is a calendar warning, since ACCESS projects can run as long as their grant).
    "hours": Bound(0, 10**5, "at most 100,000 hours, 11 years kept up; use variants for several services"),
    # Each variant is a whole run, planned and charged; large hyperparameter sweeps run
    # hundreds to a few thousand trials.
    "variants": Bound(1, 10**5, "at most 100,000 variants, each a whole run: 100× a large hyperparameter sweep"),
    # Each run at once holds at least one GPU, so more runs at once than the GPU bound cannot be.
    "concurrency": Bound(1, 10**6, "at most 10^6 runs at once: each run holds at least one GPU, and 10^6 GPUs "
                                   "is 10× the largest clusters"),
    # Checkpoints beyond the last few are archived, not kept on scratch (3 by default).
    "checkpoints_retained": Bound(1, 1000, "at most 1,000 checkpoints on scratch per run; keep the last few on "
                                           "scratch and archive the rest"),
    # Llama 3.1 405B's whole global batch was 16M tokens, 2,048 sequences of 8,192 (Dubey et al. 2024).
    "micro_batch": Bound(1, 10**5, "at most 100,000 sequences per GPU per step, 50× the 2,048-sequence global "
                                   "batch of Llama 3.1 405B"),
    # Micro-batches accumulated per optimizer step (HF Trainer, torchtune and DeepSpeed
    # gradient_accumulation_steps); on the scale of micro_batch: a step of 100,000 micro-batches of one
    # sequence is 50x Llama 3.1 405B's 2,048-sequence global batch (Dubey et al. 2024).
    "gradient_accumulation_steps": Bound(1, 10**5, "at most 100,000 micro-batches per optimizer step, 50× the "
                                                   "2,048-sequence global batch of Llama 3.1 405B"),
    # Concurrent sequences of a service, on the same scale as a training step's batch.
    "batch": Bound(1, 10**5, "at most 100,000 concurrent sequences, 50× the 2,048-sequence global batch of "
                             "Llama 3.1 405B"),
    # Llama 3.1 405B's hidden size is 16,384, the widest published; a rank at a layer's width is full rank.
    "lora_rank": Bound(1, 16_384, "at most 16,384, the hidden size of the widest published models (Llama 3.1 "
                                  "405B); a rank at a layer's width is no longer low-rank"),
    # Lower: one token in 10 s is slower than a GPU decodes any model that fits it; a smaller
    # rate is a unit slip (tokens per hour?) and would make the runtime absurd.
    "tokens_per_second": Bound(0.1, float("inf"), "at least 0.1 tokens per second, one token every 10 s: "
                                                  "check the unit is tokens per second, for all GPUs together"),
    # Upper, per GPU: training a 10M-parameter model at 10^7 tokens/s takes 6·10^7·10^7 =
    # 6·10^14 FLOP/s, most of an H100's 989 TFLOP/s dense 16-bit peak (NVIDIA H100 datasheet).
    "tokens_per_second_per_gpu": Bound(0, 10**7, "at most 10^7 tokens per second per GPU: training even a "
                                                 "10M-parameter model that fast takes 6·10^14 FLOP/s, most of an "
                                                 "H100's dense 16-bit peak"),
    # Memory one GPU reports (a pilot log's peak, an nvidia-smi sample), in bytes: the largest GPUs
    # carry 288 GB (NVIDIA B300, AMD Instinct MI355X datasheets); 2^40 is 3.8× that.
    "gpu_memory": Bound(0, 2**40, "at most 1 TiB on one GPU, 3.8× the 288 GB of the largest GPUs (NVIDIA B300, "
                                  "AMD Instinct MI355X)", "check the unit"),
    # Llama 3.1 405B has 128 attention heads, the most published; each tensor-parallel rank
    # holds at least one head (Megatron-LM splits attention by heads, Shoeybi et al. 2019).
    "tensor_parallel": Bound(1, 128, "at most 128: each tensor-parallel rank holds at least one attention head, "
                                     "and no published model has more than 128 (Llama 3.1 405B)"),
    # Llama 3.1 405B has 126 layers; each pipeline stage holds at least one layer.
    "pipeline_parallel": Bound(1, 256, "at most 256: each pipeline stage holds at least one layer, and the "
                                       "deepest published models have about 126 (Llama 3.1 405B)"),
    # Each expert-parallel rank holds at least one routed expert, so the experts' bound caps it;
    # DeepSeek-V3 trained with 64-way expert parallelism (DeepSeek-V3 technical report §3.2).
    "expert_parallel": Bound(1, 10**4, "at most 10,000: each expert-parallel rank holds at least one routed "
                                       "expert (DeepSeek-V3 trained with 64-way expert parallelism)"),
    # Llama 3 405B trained its 128k-token stage with 16-way context parallelism (Dubey et al. 2024
    # §3.3.2); each rank holds at least one token.
    "context_parallel": Bound(1, 1024, "at most 1,024, 64× the 16-way context parallelism Llama 3 trained its "
                                       "128k-token stage with (Dubey et al. 2024)"),
    # DeepSpeed ZeRO has stages 1 to 3 (Rajbhandari et al. 2020); 0 is plain data parallelism.
    "zero_stage": Bound(0, 3, "an integer from 0 to 3, the stages of DeepSpeed ZeRO (0: none)"),
    # Model-FLOPs utilization is a fraction of peak, so at most 1. Llama 3 measured 0.38–0.43 on
    # H100 (Dubey et al. 2024); below 0.01 a run would be 40× slower than that, a slip of the unit.
    "mfu": Bound(0.01, 1, "a fraction from 0.01 to 1, e.g. 0.40 (Llama 3 measured 0.38–0.43; write 40% as "
                          "0.40)"),
    # A contingency on GPU-hours; more than 100% would more than double the request.
    "buffer": Bound(0, 1, "a fraction from 0 to 1; 0.30 adds 30%; or auto"),
    # Below half, the request would cover fewer cases than the estimate itself (p50); 1 covers every row.
    "coverage": Bound(0.5, 1, "a fraction from 0.5 to 1, e.g. 0.9: the share of validated cases the request "
                              "covers (with buffer: auto)"),
    # Gemma's vocabulary of 256,000 tokens is the largest dimension of a published model.
    "dimension": Bound(1, 10**7, "at most 10^7, 40× the largest dimension of a published model "
                                 "(Gemma's 256,000-token vocabulary)"),
    # A batch job's prompts: 10^12 prompts of one token each is already 10^12 tokens; the token
    # bound (10^15) is checked on requests × (input_tokens + output_tokens) too (loading.py).
    "requests": Bound(1, 10**12, "at most 10^12 requests, more than a year of ChatGPT's reported 2.5 billion "
                                 "prompts a day", "check the suffix: k, M, B"),
    # OpenAI reported 2.5 billion ChatGPT prompts a day in July 2025 (Axios, 2025-07-21), about
    # 29,000 requests/s; 10^6/s is 35× that. Below one request in 10^6 s (11.6 days) a service is idle.
    "request_rate": Bound(1e-6, 10**6, "from 10^-6 to 10^6 requests per second (35× the ~29,000/s of "
                                        "ChatGPT's reported 2.5 billion prompts a day)",
                          "check the unit is requests per second"),
    # Time to first token: below 1 ms no GPU runs even one layer of a transformer and a network
    # round trip; above an hour a request is a batch job, not a service.
    "ttft_ms": Bound(1, 3.6e6, "from 1 ms to 3,600,000 ms (one hour) to the first token",
                     "check the unit is milliseconds"),
    # The percentile a ttft_ms target is held to: from the median up; beyond 99.9 (1 request in 1,000)
    # a service's tail is set by what the model does not have (network, restarts), not by queueing.
    "ttft_percentile": Bound(50, 99.9, "a percentile from 50 (the median) to 99.9, e.g. 90 or 99",
                             "write 99 for p99, not 0.99"),
    # Time per output token: 0.01 ms is 100,000 tokens/s for one sequence, 30× the fastest published
    # single-stream decode (~3,000 tokens/s on wafer-scale hardware); above a minute per token is a slip.
    "tpot_ms": Bound(0.01, 6e4, "from 0.01 ms to 60,000 ms (one minute) per output token",
                     "check the unit is milliseconds"),
    # A cloud instance-hour in US dollars: the dearest GPU instance in AWS's on-demand price list is
    # p6-b300.48xlarge at $142.416 (8× B300, us-west-2; skypilot-catalog's copy, catalogs/v8/aws/vms.csv).
    "price_per_hour": Bound(0, 10**4, "more than 0 and at most $10,000 per instance-hour, 70× the dearest listed "
                                      "GPU instance (AWS p6-b300.48xlarge, $142.42)",
                            "write dollars per hour of one whole instance, e.g. 55.04"),
    # DeepSeek-V3 routes among 256 experts per layer, the most published.
    "experts": Bound(1, 10**4, "at most 10,000 experts, 39× DeepSeek-V3's 256"),
}
