"""Appendix B: the papers the report's text cites, then the GPU, resource and model sources used."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..planning.records import Plan
from .views import WorkloadView


@dataclass(frozen=True)
class Reference:
    key: str                     # the in-text citation, e.g. "Rajbhandari et al. 2020"
    text: str                    # the full citation


# Papers and documents the estimate stands on, by the in-text citation the plan
# and this report use. A reference is listed only when its key (a regular
# expression) appears in the report's text.
PAPERS: tuple[tuple[str, str, str], ...] = (
    ("Asmussen & Albrecher 2010", r"Lundberg's inequality",
     ("S. Asmussen, H. Albrecher. Ruin Probabilities, 2nd ed. World Scientific, 2010. (Lundberg's "
      "inequality, ch. I and IV; the M/G/1 waiting time as the ruin probability of a compound Poisson "
      "process: the tail of a service's wait for the prefills ahead.)")),
    ("BigScience Workshop 2022", r"BLOOM",
     ("BigScience Workshop. BLOOM: A 176B-Parameter Open-Access Multilingual Language Model. "
      "arXiv:2211.05100, 2022 (156 TFLOP/s per A100, hardware FLOPs with recompute, as GENCI reports it).")),
    ("Chowdhery et al. 2022", r"Chowdhery et al\.? 2022|PaLM",
     ("A. Chowdhery, S. Narang, J. Devlin, et al. PaLM: Scaling Language Modeling with Pathways. "
      "arXiv:2204.02311, 2022; JMLR 24(240), 2023. (Appendix B: model FLOPs per token, MFU.)")),
    ("Crommelin 1932", r"Crommelin 1932",
     ("C. D. Crommelin. Delay probability formulae when the holding times are constant. Post Office "
      "Electrical Engineers' Journal 25:41–50, 1932. (The M/D/c waiting-time distribution.)")),
    ("Dao et al. 2022", r"Dao et al\.? 2022|FlashAttention",
     ("T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré. FlashAttention: Fast and Memory-Efficient Exact "
      "Attention with IO-Awareness. NeurIPS 2022; arXiv:2205.14135.")),
    ("Dettmers et al. 2022", r"Dettmers et al\.? 2022",
     ("T. Dettmers, M. Lewis, S. Shleifer, L. Zettlemoyer. 8-bit Optimizers via Block-wise Quantization. "
      "ICLR 2022; arXiv:2110.02861.")),
    ("Dettmers et al. 2023", r"Dettmers et al\.? 2023|QLoRA|NF4",
     ("T. Dettmers, A. Pagnoni, A. Holtzman, L. Zettlemoyer. QLoRA: Efficient Finetuning of Quantized LLMs. "
      "NeurIPS 2023; arXiv:2305.14314.")),
    ("Dubey et al. 2024", r"Dubey et al\.? 2024",
     ("A. Dubey, A. Jauhri, A. Pandey, et al. The Llama 3 Herd of Models. arXiv:2407.21783, 2024.")),
    ("Erlang 1909", r"Erlang 1909",
     ("A. K. Erlang. The theory of probabilities and telephone conversations. Nyt Tidsskrift for "
      "Matematik B 20:33–39, 1909. (The waiting time of one server with constant holding times: a "
      "service's wait for the prefills ahead, M/D/1.)")),
    ("Franx 2001", r"Franx 2001",
     ("G. J. Franx. A simple solution for the M/D/c waiting time distribution. Operations Research "
      "Letters 29(5):221–229, 2001; doi:10.1016/S0167-6377(01)00108-0. (The sum P(W ≤ t) for c = 1 "
      "evaluated here.)")),
    ("Frantar et al. 2023", r"Frantar et al\.? 2023|GPTQ",
     ("E. Frantar, S. Ashkboos, T. Hoefler, D. Alistarh. GPTQ: Accurate Post-Training Quantization for "
      "Generative Pre-trained Transformers. ICLR 2023; arXiv:2210.17323.")),
    ("Guo et al. 2024", r"Guo et al\.?,? (ASPLOS )?2024|GMLake",
     ("C. Guo, R. Zhang, J. Xu, J. Leng, et al. GMLake: Efficient and Transparent GPU Memory "
      "Defragmentation for Large-scale DNN Training with Virtual Memory Stitching. ASPLOS 2024; "
      "arXiv:2401.08156.")),
    ("Hoffmann et al. 2022", r"Hoffmann et al\.? 2022|Chinchilla",
     ("J. Hoffmann, S. Borgeaud, A. Mensch, et al. Training Compute-Optimal Large Language Models. "
      "NeurIPS 2022; arXiv:2203.15556.")),
    ("Hu et al. 2021", r"Hu et al\.? 2021|LoRA",
     ("E. J. Hu, Y. Shen, P. Wallis, Z. Allen-Zhu, Y. Li, S. Wang, L. Wang, W. Chen. LoRA: Low-Rank "
      "Adaptation of Large Language Models. ICLR 2022; arXiv:2106.09685, 2021.")),
    ("Kaplan et al. 2020", r"Kaplan et al\.? 2020",
     ("J. Kaplan, S. McCandlish, T. Henighan, T. B. Brown, B. Chess, R. Child, S. Gray, A. Radford, J. Wu, "
      "D. Amodei. Scaling Laws for Neural Language Models. arXiv:2001.08361, 2020.")),
    ("Korthikanti et al. 2022", r"Korthikanti et al\.? 2022",
     ("V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch, M. Shoeybi, B. Catanzaro. Reducing "
      "Activation Recomputation in Large Transformer Models. MLSys 2023; arXiv:2205.05198, 2022.")),
    ("Kwon et al. 2023", r"Kwon et al\.? 2023|vLLM",
     ("W. Kwon, Z. Li, S. Zhuang, Y. Sheng, L. Zheng, C. H. Yu, J. E. Gonzalez, H. Zhang, I. Stoica. "
      "Efficient Memory Management for Large Language Model Serving with PagedAttention (vLLM). SOSP 2023; "
      "arXiv:2309.06180.")),
    ("Lin et al. 2024", r"Lin et al\.? 2024|AWQ",
     ("J. Lin, J. Tang, H. Tang, S. Yang, W.-M. Chen, W.-C. Wang, G. Xiao, X. Dang, C. Gan, S. Han. AWQ: "
      "Activation-aware Weight Quantization for LLM Compression and Acceleration. MLSys 2024; "
      "arXiv:2306.00978.")),
    ("llm-foundry", r"llm-foundry",
     ("mosaicml/llm-foundry, scripts/train/benchmarking/README.md at commit 8c8dd48f: MFU and HFU of MPT "
      "training with and without activation checkpointing.")),
    ("Little 1961", r"Little 1961|Little's law",
     ("J. D. C. Little. A Proof for the Queuing Formula: L = λW. Operations Research 9(3):383–387, 1961. "
      "(Requests in flight = arrival rate × time in the system.)")),
    ("Micikevicius et al. 2018", r"Micikevicius et al\.? 2018|fp32 master",
     ("P. Micikevicius, S. Narang, J. Alben, G. Diamos, E. Elsen, D. Garcia, B. Ginsburg, M. Houston, "
      "O. Kuchaiev, G. Venkatesh, H. Wu. Mixed Precision Training. ICLR 2018; arXiv:1710.03740.")),
    ("NAIRR community guide", r"NAIRR community guide",
     ("NAIRR Pilot community documentation (nairr.readthedocs.io): \"GPU Estimate\" and \"Generalized "
      "Resource Estimation\".")),
    ("Narayanan et al. 2021", r"Narayanan et al\.? 2021",
     ("D. Narayanan, M. Shoeybi, J. Casper, et al. Efficient Large-Scale Language Model Training on GPU "
      "Clusters Using Megatron-LM. SC21; arXiv:2104.04473, 2021.")),
    ("Rajbhandari et al. 2020", r"Rajbhandari et al\.? 2020|ZeRO",
     ("S. Rajbhandari, J. Rasley, O. Ruwase, Y. He. ZeRO: Memory Optimizations Toward Training Trillion "
      "Parameter Models. SC20, 2020; arXiv:1910.02054.")),
    ("Takács 1962", r"M/G/∞",
     ("L. Takács. Introduction to the Theory of Queues. Oxford University Press, 1962. (The number "
      "in an M/G/∞ system is Poisson with mean λ·E[W]: a service's requests in flight about Little's mean.)")),
    ("torchtune", r"torchtune",
     ("pytorch/torchtune, README at commit 30b8519e: memory and throughput table (Llama 3.1 8B LoRA and "
      "QLoRA on one RTX 4090).")),
    ("torchtitan", r"torchtitan",
     ("pytorch/torchtitan, torchtitan/models/llama/parallelize_llama.py at commit 82010c79: op-level "
      "selective activation checkpointing (every second matmul recomputed).")),
    ("TensorRT-LLM performance overview", r"TensorRT-LLM performance overview",
     ("NVIDIA/TensorRT-LLM, docs/source/performance/perf-overview.md at commit 00f37686aa85: "
      "'Throughput Measurements', trtllm-bench offline throughput of Llama 3.1 8B, Llama 3.3 70B and "
      "Llama 3.1 405B (FP8) on H100 and H200 (the inference engines' achieved fractions are fitted on the "
      "H100 rows; docs/validation.md).")),
    ("Touvron et al. 2023", r"Touvron et al\.? 2023",
     ("H. Touvron, L. Martin, K. Stone, et al. Llama 2: Open Foundation and Fine-Tuned Chat Models. "
      "arXiv:2307.09288, 2023.")),
)


def references(plan: Plan, views: tuple[WorkloadView, ...]) -> tuple[Reference, ...]:
    """The papers the report's text cites, then every GPU datasheet, resource and model config used."""
    text = "\n".join(
        [s.text for v in views for s in v.steps + v.details]
        + [a for v in views for a in v.assumptions]
        + [c.source + " " + c.name for v in views for c in v.cross_checks]
        + [a.reason for v in views for a in v.alternatives]
        + list(plan.warnings)
    )
    refs = [Reference(key, full) for key, pattern, full in PAPERS if re.search(pattern, text)]
    seen: set[str] = set()
    for w in plan.workloads:
        if w.gpu.id not in seen:
            seen.add(w.gpu.id)
            usable = w.gpu.usable_memory_source
            refs.append(Reference(w.gpu.name, " ".join(w.gpu.source.split())
                                  + (f" Usable memory: {' '.join(usable.split())}" if usable else "")))
    for w in plan.workloads:
        charge = w.charge
        if charge is not None and charge.resource_id not in seen:
            seen.add(charge.resource_id)
            r = charge.resource
            refs.append(Reference(r.name, " ".join(r.source.split())))
    for w in plan.workloads:
        if w.model.id not in seen and w.model.source:
            seen.add(w.model.id)
            refs.append(Reference(w.model.name, " ".join(w.model.source.split())))
    return tuple(refs)

