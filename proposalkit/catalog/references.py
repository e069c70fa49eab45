"""The works the estimate stands on: one home for every citation the report can list.

Notes and derivations cite a work by its id (proposalkit/notes.py); the plan lists the works its
records cite, once each, in this order (Appendix B). The GPU, resource and model sources are their
catalogs' own rows.
"""

from __future__ import annotations

from ..notes import Reference


# id → (in-text citation, full citation), by in-text citation.
_WORKS: tuple[tuple[str, str, str], ...] = (
    ("asmussen-albrecher-2010", "Asmussen & Albrecher 2010",
     ("S. Asmussen, H. Albrecher. Ruin Probabilities, 2nd ed. World Scientific, 2010. (Lundberg's "
      "inequality, ch. I and IV; the M/G/1 waiting time as the ruin probability of a compound Poisson "
      "process: the tail of a service's wait for the prefills ahead.)")),
    ("aws-ec2-pricing", "AWS EC2 pricing",
     ("Amazon Web Services. Amazon EC2 On-Demand Pricing, https://aws.amazon.com/ec2/pricing/on-demand/ "
      "(Linux, per instance-hour, by region). The figures used are as a dated copy of AWS's price list reads "
      "them; the resource's entry below names the copy and its date.")),
    ("azure-vm-pricing", "Azure VM pricing",
     ("Microsoft Azure. Linux Virtual Machines Pricing, "
      "https://azure.microsoft.com/en-us/pricing/details/virtual-machines/linux/ (pay-as-you-go, per VM-hour, "
      "by region). The figures used are as a dated copy of Azure's retail price list reads them; the "
      "resource's entry below names the copy and its date.")),
    # Each GPU's figure and the table row it is read from are in catalog/gpus.yaml (mamf_flops, mamf_source).
    ("bekman-mamf", "Bekman, Machine Learning Engineering",
     ("S. Bekman. Machine Learning Engineering Open Book, compute/accelerator/README.md, 'Maximum Achievable "
      "Matmul FLOPS comparison table' (BF16; mamf-finder.py, the best-shape matmul's mean TFLOPS per "
      "accelerator), revision 744d01e18b79 (2026-08-22), https://github.com/stas00/ml-engineering. (The training "
      "step's matmuls run at a fitted share of this measured rate, not of the datasheet peak; a GPU the table "
      "does not measure takes its vendor's lowest measured efficiency.)")),
    ("biderman-2023", "Biderman et al. 2023",
     ("S. Biderman, H. Schoelkopf, Q. Anthony, et al. Pythia: A Suite for Analyzing Large Language Models "
      "Across Training and Scaling. ICML 2023; arXiv:2304.01373. (Table 1: layers, model dim and heads of "
      "the eight models, 70M to 12B.)")),
    ("bigscience-2022", "BigScience Workshop 2022",
     ("BigScience Workshop. BLOOM: A 176B-Parameter Open-Access Multilingual Language Model. "
      "arXiv:2211.05100, 2022 (156 TFLOP/s per A100, hardware FLOPs with recompute, as GENCI reports it).")),
    ("chowdhery-2022", "Chowdhery et al. 2022",
     ("A. Chowdhery, S. Narang, J. Devlin, et al. PaLM: Scaling Language Modeling with Pathways. "
      "arXiv:2204.02311, 2022; JMLR 24(240), 2023. (Appendix B: model FLOPs per token, MFU.)")),
    ("crommelin-1932", "Crommelin 1932",
     ("C. D. Crommelin. Delay probability formulae when the holding times are constant. Post Office "
      "Electrical Engineers' Journal 25:41–50, 1932. (The M/D/c waiting-time distribution.)")),
    ("dao-2022", "Dao et al. 2022",
     ("T. Dao, D. Y. Fu, S. Ermon, A. Rudra, C. Ré. FlashAttention: Fast and Memory-Efficient Exact "
      "Attention with IO-Awareness. NeurIPS 2022; arXiv:2205.14135.")),
    ("dettmers-2022", "Dettmers et al. 2022",
     ("T. Dettmers, M. Lewis, S. Shleifer, L. Zettlemoyer. 8-bit Optimizers via Block-wise Quantization. "
      "ICLR 2022; arXiv:2110.02861.")),
    ("dettmers-2023", "Dettmers et al. 2023",
     ("T. Dettmers, A. Pagnoni, A. Holtzman, L. Zettlemoyer. QLoRA: Efficient Finetuning of Quantized LLMs."
      " NeurIPS 2023; arXiv:2305.14314.")),
    ("dubey-2024", "Dubey et al. 2024",
     "A. Dubey, A. Jauhri, A. Pandey, et al. The Llama 3 Herd of Models. arXiv:2407.21783, 2024."),
    ("erlang-1909", "Erlang 1909",
     ("A. K. Erlang. The theory of probabilities and telephone conversations. Nyt Tidsskrift for Matematik "
      "B 20:33–39, 1909. (The waiting time of one server with constant holding times: a service's wait for "
      "the prefills ahead, M/D/1.)")),
    ("franx-2001", "Franx 2001",
     ("G. J. Franx. A simple solution for the M/D/c waiting time distribution. Operations Research Letters "
      "29(5):221–229, 2001; doi:10.1016/S0167-6377(01)00108-0. (The sum P(W ≤ t) for c = 1 evaluated here.)")),
    ("frantar-2023", "Frantar et al. 2023",
     ("E. Frantar, S. Ashkboos, T. Hoefler, D. Alistarh. GPTQ: Accurate Post-Training Quantization for "
      "Generative Pre-trained Transformers. ICLR 2023; arXiv:2210.17323.")),
    ("gcp-vm-pricing", "Google Cloud VM pricing",
     ("Google Cloud. VM instance pricing, accelerator-optimized machine types, "
      "https://cloud.google.com/compute/vm-instance-pricing#accelerator-optimized (on-demand, per hour, by "
      "region: GPUs, vCPUs and memory of the machine type). The figures used are as a dated copy of Google's "
      "Cloud Billing Catalog reads them; the resource's entry below names the copy and its date.")),
    ("guo-2024", "Guo et al. 2024",
     ("C. Guo, R. Zhang, J. Xu, J. Leng, et al. GMLake: Efficient and Transparent GPU Memory "
      "Defragmentation for Large-scale DNN Training with Virtual Memory Stitching. ASPLOS 2024; "
      "arXiv:2401.08156.")),
    ("hoffmann-2022", "Hoffmann et al. 2022",
     ("J. Hoffmann, S. Borgeaud, A. Mensch, et al. Training Compute-Optimal Large Language Models. NeurIPS "
      "2022; arXiv:2203.15556.")),
    ("hu-2021", "Hu et al. 2021",
     ("E. J. Hu, Y. Shen, P. Wallis, Z. Allen-Zhu, Y. Li, S. Wang, L. Wang, W. Chen. LoRA: Low-Rank "
      "Adaptation of Large Language Models. ICLR 2022; arXiv:2106.09685, 2021.")),
    ("kaplan-2020", "Kaplan et al. 2020",
     ("J. Kaplan, S. McCandlish, T. Henighan, T. B. Brown, B. Chess, R. Child, S. Gray, A. Radford, J. Wu, "
      "D. Amodei. Scaling Laws for Neural Language Models. arXiv:2001.08361, 2020.")),
    ("korthikanti-2022", "Korthikanti et al. 2022",
     ("V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch, M. Shoeybi, B. Catanzaro. Reducing "
      "Activation Recomputation in Large Transformer Models. MLSys 2023; arXiv:2205.05198, 2022.")),
    ("kwon-2023", "Kwon et al. 2023",
     ("W. Kwon, Z. Li, S. Zhuang, Y. Sheng, L. Zheng, C. H. Yu, J. E. Gonzalez, H. Zhang, I. Stoica. "
      "Efficient Memory Management for Large Language Model Serving with PagedAttention (vLLM). SOSP 2023; "
      "arXiv:2309.06180.")),
    ("lin-2024", "Lin et al. 2024",
     ("J. Lin, J. Tang, H. Tang, S. Yang, W.-M. Chen, W.-C. Wang, G. Xiao, X. Dang, C. Gan, S. Han. AWQ: "
      "Activation-aware Weight Quantization for LLM Compression and Acceleration. MLSys 2024; "
      "arXiv:2306.00978.")),
    ("llm-foundry", "llm-foundry",
     ("mosaicml/llm-foundry, scripts/train/benchmarking/README.md at commit 8c8dd48f: MFU and HFU of MPT "
      "training with and without activation checkpointing.")),
    ("little-1961", "Little 1961",
     ("J. D. C. Little. A Proof for the Queuing Formula: L = λW. Operations Research 9(3):383–387, 1961. "
      "(Requests in flight = arrival rate × time in the system.)")),
    ("micikevicius-2018", "Micikevicius et al. 2018",
     ("P. Micikevicius, S. Narang, J. Alben, G. Diamos, E. Elsen, D. Garcia, B. Ginsburg, M. Houston, O. "
      "Kuchaiev, G. Venkatesh, H. Wu. Mixed Precision Training. ICLR 2018; arXiv:1710.03740.")),
    ("nairr-guide", "NAIRR community guide",
     ('NAIRR Pilot community documentation (nairr.readthedocs.io): "GPU Estimate" and "Generalized Resource'
      ' Estimation".')),
    ("narayanan-2021", "Narayanan et al. 2021",
     ("D. Narayanan, M. Shoeybi, J. Casper, et al. Efficient Large-Scale Language Model Training on GPU "
      "Clusters Using Megatron-LM. SC21; arXiv:2104.04473, 2021.")),
    # The runs' files are benchmarks/validation/measured/ (results/h100-80gb-hbm3-2026-11-26*.json); a reviewer has
    # the document, not this repository, so the entry names the data set, not its path.
    ("proposalkit-h100", "proposalkit's H100 measurements",
     ("proposalkit (the tool that produced this document), its validation measurements: twelve Hugging Face "
      "Trainer runs (full fine-tunes and PEFT LoRA of Llama 3.2 1B and 3B, Llama 3.1 8B, Qwen2.5 0.5B; eager and "
      "compiled) on one H100 80GB HBM3 at 700 W, 2026-11-26, with torch.profiler's kernel times per step.")),
    ("rajbhandari-2020", "Rajbhandari et al. 2020",
     ("S. Rajbhandari, J. Rasley, O. Ruwase, Y. He. ZeRO: Memory Optimizations Toward Training Trillion "
      "Parameter Models. SC20, 2020; arXiv:1910.02054.")),
    ("shoeybi-2019", "Shoeybi et al. 2019",
     ("M. Shoeybi, M. Patwary, R. Puri, P. LeGresley, J. Casper, B. Catanzaro. Megatron-LM: Training Multi-Billion "
      "Parameter Language Models Using Model Parallelism. arXiv:1909.08053, 2019. (§3: two all-reduces per layer "
      "in the forward pass, two in the backward.)")),
    ("takacs-1962", "Takács 1962",
     ("L. Takács. Introduction to the Theory of Queues. Oxford University Press, 1962. (The number in an "
      "M/G/∞ system is Poisson with mean λ·E[W]: a service's requests in flight about Little's mean.)")),
    ("torchtune-readme", "torchtune",
     ("pytorch/torchtune, README at commit 30b8519e: memory and throughput table (Llama 3.1 8B LoRA and "
      "QLoRA on one RTX 4090).")),
    ("torchtitan-sac", "torchtitan",
     ("pytorch/torchtitan, torchtitan/models/llama/parallelize_llama.py at commit 82010c79: op-level "
      "selective activation checkpointing (every second matmul recomputed).")),
    ("trt-llm-perf", "TensorRT-LLM performance overview",
     ("NVIDIA/TensorRT-LLM, docs/source/performance/perf-overview.md at commit 00f37686aa85: 'Throughput "
      "Measurements', trtllm-bench offline throughput of Llama 3.1 8B, Llama 3.3 70B and Llama 3.1 405B "
      "(FP8) on H100 and H200 (the inference engines' achieved fractions are fitted on the H100 rows).")),
    ("touvron-2023", "Touvron et al. 2023",
     ("H. Touvron, L. Martin, K. Stone, et al. Llama 2: Open Foundation and Fine-Tuned Chat Models. "
      "arXiv:2307.09288, 2023.")),
)
REFERENCES: dict[str, Reference] = {id_: Reference(id_, key, text) for id_, key, text in _WORKS}


def cited(ids) -> tuple[Reference, ...]:
    """The works of `ids` (any order, repeats allowed), each once, in the catalog's order; an unknown id
    is a KeyError (a note citing a work the catalog does not hold is a bug, not a blank line)."""
    wanted = set(ids)
    unknown = wanted - REFERENCES.keys()
    if unknown:
        raise KeyError(f"no reference with id {', '.join(sorted(unknown))} in catalog/references.py")
    return tuple(r for id_, r in REFERENCES.items() if id_ in wanted)
