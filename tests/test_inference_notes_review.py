"""An hf (transformers generate()) plan does not cite vLLM's gpu_memory_utilization: transformers reserves no pool.

Llama 3.1 8B on one A40, hf engine, batch 8 × 4,096 tokens, by hours: weights, KV cache 8 × 4,096 × 131,072 B
(2 × 32 layers × 8 kv heads × 128 × 2 B) = 4 GiB, activations and the caching allocator's reserve; no
engine reservation, so no line about vLLM's 0.9.
"""

from __future__ import annotations
from conftest import records

WORKLOAD = """\
workloads:
  - {name: w, kind: inference, model: llama-3.1-8b, hours: 100, context: 4096, batch: 8, gpu: a40, gpus: 1,
     framework: hf}
"""


def test_hf_plan_has_no_vllm_reservation_line(plan_workloads):
    got = plan_workloads(WORKLOAD)["w"]
    assert got["memory"]["components"]["kv_cache"] == 8 * 4096 * 131_072
    assert not records(got, "engine-reserve")
