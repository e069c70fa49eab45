"""The planning knobs: every setting that says how a run runs, its default, where that default comes from,
and what it means. One table, below every reader.

A knob is set by the workload (its field, or `defaults:`), else by the workload's framework preset
(input/frameworks.py), else it takes the default here. Some knobs are behaviour flags that only a
framework preset sets (field None): how the software the workload names behaves, resolved once when
the file is loaded, so that the estimates read the behaviour and never the framework's name.

Who reads the table:
- the workload schema (input/schema.py) takes each field's description from `meaning`;
- the planner (planning/planner.py) fills each unset knob with `default`, and its assumption lines
  quote these defaults;
- the planner's Settings (planning/records.py) and the estimate's TrainingSetup and InferenceSetup
  (estimate/setups.py) hold the knobs under the same names; tests/test_knobs.py fails where a record
  lacks a knob, has one the table does not, or defaults it differently.

Adding a knob: a row here; its field in each record that carries it, declared with its type and
`default(name)` (the schema's with its value type and `_knob(name)`; tests/test_knobs.py names each
record that lacks it); and the code that uses it. The planner fills Settings from the table and
passes the training knobs to TrainingSetup by name, so no mapping is written per knob.
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog.modules import LoraSpec
from .options import DEFAULT_LOSS

TRAINING, INFERENCE, BOTH = "training", "inference", "both"
SAME = "="          # Knob.field: the workload field of the knob's own name


@dataclass(frozen=True)
class Knob:
    """One planning knob.

    name:    the Settings field, the estimate setup's field and (unless `field` says otherwise) the
             workload field: one name everywhere.
    type:    the value's type as the records annotate it (a record may add `| None` for "not given").
    default: what the planner uses where the workload, `defaults:` and the framework preset leave it
             unset; None where there is no fixed value (`chosen` says what the planner tries instead).
    source:  where that default comes from.
    meaning: what the knob does (the schema's description of the field).
    applies: the workloads it changes: training, inference or both.
    field:   the workload field that sets it, dotted under a section (offload.optimizer); SAME: `name`;
             None: a behaviour flag only a framework preset sets.
    setups:  the estimate records that take it: "training" (TrainingSetup), "inference" (InferenceSetup).
    settings: whether the planner's Settings record holds it.
    chosen:  for a knob the planner searches when unset, the values it tries, in order (the first is
             the estimate record's default).
    """

    name: str
    type: str
    default: object
    source: str
    meaning: str
    applies: str = TRAINING
    field: str | None = SAME
    setups: tuple[str, ...] = ()
    settings: bool = True
    chosen: tuple = ()

    @property
    def workload_field(self) -> str | None:
        return self.name if self.field == SAME else self.field


_T, _I, _TI = ("training",), ("inference",), ("training", "inference")
_BUFFER = 0.30              # a default its description quotes
# The share of validated cases `buffer: auto` covers when `coverage` is not given: the 90th percentile the
# plan's ranges show as "high", so that the request reaches the range's high end.
AUTO_COVERAGE = 0.90
_TTFT_PERCENTILE = 99.0     # likewise

_ROWS = (
    # ------------------------------------------------------------ every workload
    Knob("precision", "str", "bf16",
         "the 16-bit format current recipes train and serve in (torchtune's configs: dtype bf16; Llama 3's "
         "config.json torch_dtype bfloat16); a quantized checkpoint is served at its own",
         "Weight precision. An inference workload on a quantized checkpoint (config.json quantization_config) is "
         "planned at the checkpoint's own unless this is set. Planned only on GPUs whose tensor cores run it: bf16 "
         "not on a V100 (write fp16 there), fp8 on Hopper, Ada Lovelace, Blackwell and MI300X only.", BOTH,
         setups=_TI),
    Knob("buffer", "float", _BUFFER, "NAIRR community guide, GPU estimate page: \"Add 30% buffer\"",
         f"Contingency added to GPU-hours (default {_BUFFER:.2f}), or auto: the least buffer (in whole percent) "
         "whose request covers `coverage` of the validated cases of the workload's estimate (its ranges).", BOTH),
    Knob("coverage", "float", None,
         f"none: the buffer is a number; with buffer: auto, {AUTO_COVERAGE:g} (the ranges' high end, p90)",
         "With buffer: auto, the share of validated cases the request must cover (0.5 to 1; default "
         f"{AUTO_COVERAGE:g}): the cases are the validation rows of the workload's estimate, each a measured run "
         "set beside its plan (docs/validation.md, Ranges).", BOTH),
    Knob("buffer_reason", "str", None,
         "none: a buffer within the NAIRR community guide's 20–30% (retries, sweeps, profiling, evaluation) needs "
         "no reason of its own",
         "Why the buffer is what it is, in a sentence for the reviewer (shown in the report beside the buffer); "
         "`proposalkit check --review` asks for it when the buffer is outside the NAIRR guide's 20–30%.", BOTH),
    Knob("variants", "int", 1, "one run",
         "Runs of this workload, each a whole job (seeds, sweep points, ablations): GPU-hours, the charge and the "
         "final weights kept are multiplied by it.", BOTH),
    Knob("concurrency", "int", 1, "one run at a time",
         "Runs (variants) of this workload at once: calendar time is ⌈variants ÷ concurrency⌉ runs one after "
         "another, and peak scratch holds the checkpoints of this many runs. GPU-hours do not change.", BOTH),
    Knob("tensor_parallel", "int", 1, "no tensor parallelism (data parallel only); inference: the planner "
                                      "tries the degrees that divide the heads",
         "GPUs each layer's matrices are split over (Megatron-LM tensor parallelism); for inference, the GPUs of "
         "one replica. With gpus pinned, tensor_parallel × pipeline_parallel must divide it.", BOTH, setups=_TI),
    Knob("flash_attention", "bool", True, "current training recipes; Dao et al. 2022",
         "Training: FlashAttention, which keeps no s² attention scores. On an inference workload false means "
         "attention: eager.", BOTH, setups=_T),
    Knob("price_per_hour", "float", None,
         "the catalog's on-demand price of the instance type, with its region and the date it was read "
         "(catalog/resources.yaml price)",
         "Cloud resource (AWS, Azure, Google via CloudBank): US dollars per hour of one whole instance, in place "
         "of the catalog's dated on-demand price (a quote, a newer or a discounted price). In proposal: for the "
         "workloads on the proposal's resource.", BOTH),
    Knob("framework", "str", None, "none named: the planner's own defaults, each stated",
         "The software that will run it: for training hf-trainer, torchtune, torchtitan, deepspeed, megatron, "
         "axolotl, llama-factory (sets the defaults its standard recipe uses, each stated as an assumption with its "
         "source; the workload's own fields override them); for inference the engine vllm, sglang, trt-llm or hf "
         "(its memory rule, batch limit and calibrated speed).", BOTH),
    # ------------------------------------------------------------ training
    Knob("seq_len", "int", 4096,
         "the model's maximum context, capped: long-context models (Llama 3.1: 131,072) are not fine-tuned at "
         "full length by default (torchtune and Hugging Face TRL recipes pack to 2,048-4,096)",
         "Training: tokens per sequence. Default: data.seq_len, else the model's maximum context up to the "
         "planner's cap.", setups=_T),
    Knob("micro_batch", "int", 1, "one sequence per GPU per step, the least memory",
         "Training: sequences per GPU per step.", setups=_T),
    Knob("gradient_accumulation_steps", "int", None,
         "not stated: the gradients are counted beside the loss peak (conservative)",
         "Training: micro-batches whose gradients are accumulated before each optimizer step (the name HF "
         "Trainer, torchtune and DeepSpeed use). Memory only: with 1, gradients freed between steps do not "
         "coexist with the loss peak (single GPU, FSDP); unset: gradients are counted beside it.", setups=_T),
    Knob("zero_stage", "int", None, "the smallest stage that fits (Rajbhandari et al. 2020), chosen by the "
                                    "planner",
         "Training: ZeRO stage over the data-parallel GPUs, 0 (none), 1 (optimizer states sharded), 2 (+ "
         "gradients) or 3 (+ weights; FSDP full shard). Unset: the smallest that fits, chosen by the planner.",
         setups=_T, chosen=(0, 1, 2, 3)),
    Knob("pipeline_parallel", "int", 1, "no pipeline parallelism",
         "Training: pipeline stages the layers are split into (the fullest stage is counted).", setups=_T),
    Knob("expert_parallel", "int", 1, "the routed experts whole on every GPU",
         "GPUs over which a mixture of experts' routed experts are split (training).", setups=_T),
    Knob("context_parallel", "int", 1, "each sequence whole on every GPU",
         "Training: GPUs over which each sequence is split (torchtitan context parallelism, ring attention); a "
         "model copy spans tensor × pipeline × context parallel GPUs.", setups=_T),
    Knob("activation_checkpointing", "bool | str", None,
         "off, turned on by the planner where nothing fits without it (its recompute charged)",
         "true (full: each layer's input kept, the layer recomputed), false, or selective (Megatron-LM's "
         "attention-core recomputation; torchtitan's op-level policy with its preset). Unset: off, turned on by "
         "the planner where nothing fits without it (its recompute charged).", BOTH, setups=_T,
         chosen=(False, True)),
    Knob("activation_offload", "bool", False, "torchtune's enable_activation_offloading is opt-in",
         "Training: saved activations copied to CPU memory in the forward and brought back in the backward "
         "(torchtune enable_activation_offloading).", setups=_T),
    Knob("compile", "bool", False,
         "eager PyTorch, as the Hugging Face Trainer and most trainers run unless told",
         "Training: the model runs under torch.compile (torchtune/torchtitan compile, HF Trainer torch_compile): "
         "its layers keep what fused kernels keep and a chunked loss is compiled. Default: false (eager PyTorch, "
         "which also keeps fp32 norm copies, a gated MLP's activation output and GQA's K/V head copies); a "
         "framework preset sets its default.", settings=False),
    Knob("loss", "str", DEFAULT_LOSS,
         "cross_entropy on fp32-upcast logits, as Hugging Face transformers and torchtitan compute it "
         "(estimate/loss.py LOSS_SOURCES)",
         "Training loss on the logits: standard (cross_entropy on fp32-upcast logits, as Hugging Face "
         "transformers and torchtitan), chunked (torchtune CEWithChunkedOutputLoss), fused (fused linear + "
         "cross-entropy: Liger, Cut Cross-Entropy), transformers-4.37 (the model's own loss in transformers "
         "4.37-4.45, whose fp32 logits a loop keeping the model's output holds through the backward: 16 B per "
         "logit; under the Hugging Face Trainer, which drops the output, it is standard). Default: standard.",
         setups=_T),
    Knob("optimizer", "str", "adamw",
         "AdamW (Loshchilov & Hutter 2019), the optimizer of the Hugging Face Trainer's default (adamw_torch) "
         "and of torchtune's and torchtitan's recipes",
         "adamw, adamw-8bit, paged-adamw, paged-adamw-8bit (bitsandbytes paged: states evictable to host "
         "memory), sgd.", setups=_T),
    Knob("mixed_precision", "bool", True,
         "fp32 master weights beside 16-bit compute: AMP, FSDP mixed precision, DeepSpeed, Megatron-LM",
         "true (default): fp32 master weights beside 16-bit compute (AMP, FSDP mixed precision, DeepSpeed, "
         "Megatron); false: pure 16-bit training (torchtune), adapters in 16-bit.", setups=_T),
    Knob("optimizer_in_backward", "bool", False, "torchtune's optimizer_in_bwd is opt-in; trainers step after "
                                                 "the backward",
         "Optimizer step fused into the backward pass (torchtune optimizer_in_bwd): no full gradient buffer.",
         setups=_T),
    Knob("offload_optimizer", "bool", False, "nothing offloaded unless asked",
         "cpu: optimizer states, fp32 master weights and gradients in host memory, the step on the CPU "
         "(DeepSpeed offload_optimizer).", field="offload.optimizer", setups=_T),
    Knob("offload_params", "bool", False, "nothing offloaded unless asked",
         "cpu: parameter and gradient shards in host memory, gathered to the GPU a unit at a time (DeepSpeed "
         "offload_param, FSDP CPUOffload); needs zero_stage 3. FSDP's CPU offload also runs the optimizer on the "
         "CPU: write optimizer: cpu as well.", field="offload.params", setups=_T),
    Knob("lora", "LoraSpec", None,
         f"none: method full trains every weight; lora and qlora take LoraSpec's defaults (catalog/modules.py: rank "
         f"{LoraSpec.rank} on the attention projections, each with its source)",
         "LoRA and QLoRA: adapter rank and target modules.", setups=_T),
    Knob("checkpoints_retained", "int", 3,
         "the planner's: the latest few on scratch, the rest archived (Hugging Face TrainingArguments keeps every "
         "checkpoint unless save_total_limit is set)",
         "Checkpoints kept on scratch per run: peak scratch = checkpoint size × this × concurrency (+ the "
         "dataset).", field="storage.checkpoints_retained"),
    # ------------------------------------------------------------ training: what the framework does
    Knob("kernels", "str", "eager", "eager PyTorch, as the Hugging Face Trainer and most trainers run unless told "
                                    "(compile: true makes it compiled)",
         "How the layers' kernels run: eager (eager PyTorch's extra saved tensors), compiled (torch.compile of "
         "each layer: fused layers, an eager final norm, a compiled chunked loss) or fused (a framework's own "
         "fused kernels: Megatron-LM's Transformer Engine).", field=None, setups=_T),
    Knob("optimizer_impl", "str", "torch", "torch.optim (or bitsandbytes) on the model's own parameters",
         "Who holds the optimizer's states and gradients (estimate/model_states.py OPTIMIZER_IMPLS): torch, "
         "fp32-gradient-buffer (an fp32 accumulation buffer of the whole replica beside the 16-bit gradients: "
         "DeepSpeed's BF16_Optimizer) or fp32-main-gradients (Megatron-LM's).", field=None, setups=_T),
    Knob("selective_policy", "str", "attention",
         "Megatron-LM's selective recompute of the attention core (Korthikanti et al. 2022 §5)",
         "What selective activation checkpointing keeps (estimate/checkpointing.py): attention (the attention "
         "core recomputed) or op (torchtitan's op-level policy).", field=None, setups=_T),
    Knob("softmax_fp32", "bool", True, "eager PyTorch under autocast, and transformers' eager attention, run the "
                                       "softmax in fp32",
         "Unfused attention's softmax in fp32 (false: a fused 16-bit softmax kernel, Megatron-LM's).", field=None,
         setups=_T),
    Knob("sequence_parallel", "bool", True, "Megatron-LM's sequence parallelism with tensor parallelism "
                                            "(Korthikanti et al. 2022 §4.2.2)",
         "Tensor parallelism also splits the norms' and dropouts' activations along the sequence.", field=None,
         setups=_T),
    Knob("autocast_fp32_params", "bool", False, "16-bit parameters under a mixed-precision optimizer",
         "16-bit compute by torch.autocast over fp32 parameters (the Hugging Face Trainer's AMP): every saved "
         "activation at the dtype autocast gives it, and autocast's 16-bit weight copies.", field=None, setups=_T),
    Knob("optimizer_step_temporary", "str", "none",
         "an optimizer that updates in place (torch's fused AdamW, bitsandbytes, DeepSpeed's and Megatron-LM's "
         "FusedAdam); a workload that names no framework is not counted",
         "What the optimizer step allocates beside the model states: foreach (torch's foreach AdamW: the square "
         "root of every second moment) or none.", field=None, setups=_T),
    Knob("frees_gradients_between_steps", "bool", True,
         "optimizer.zero_grad(set_to_none=True), PyTorch's default since 2.0 (pytorch @ 002d2f0b "
         "torch/optim/optimizer.py)",
         "The gradients are freed after each optimizer step (false: the framework keeps its gradient buffers "
         "across steps).", field=None, setups=_T),
    Knob("data_parallel_impl", "str", "ddp",
         "PyTorch DDP, whose reducer buckets are allocated once (torch/csrc/distributed/c10d/reducer.cpp @ "
         "ad78a7b3), or a ZeRO implementation the workload does not name",
         "How data parallelism holds gradients: ddp (buckets kept across steps) or fsdp2 (fully_shard: sharded "
         "gradients are plain .grad tensors, and each unit's reduce-scatter copies its gradients into a new "
         "buffer).", field=None, setups=_T),
    Knob("fsdp_fp32_params", "bool", False, "FSDP2 without a mixed-precision policy keeps the parameters' dtype",
         "FSDP2's MixedPrecisionPolicy over fp32 sharded parameters: 16-bit compute, gradients reduced in fp32, "
         "checkpoints of fp32 parameters.", field=None, setups=_T),
    Knob("offload_under_zero", "bool", False, "FSDP's CPUOffload runs without ZeRO stages",
         "Optimizer offload runs only under ZeRO stages 1-3 (DeepSpeed's offload_optimizer is a "
         "zero_optimization setting).", field=None),
    # ------------------------------------------------------------ inference
    Knob("attention", "str", "flash", "the serving engines' FlashAttention kernels",
         "Inference: the attention kernel, flash (FlashAttention), sdpa (PyTorch's fused kernels) or eager (matmul "
         "+ softmax: a layer's s×s scores are held at the prefill). Default: flash; flash_attention: false means "
         "eager.", INFERENCE, setups=_I),
    Knob("context", "int", None, "none: a service by hours states it; a batch job's or a service by load's is "
                                 "input_tokens + output_tokens",
         "Inference, a service kept up hours: tokens per sequence (prompt and output).", INFERENCE, setups=_I),
    Knob("batch", "int", 1, "one sequence; a batch job's and a service by load's batch is what the engine runs",
         "Inference: sequences at once. A service kept up hours: the sequences of context tokens held; a batch "
         "job or a service by load: a cap per replica.", INFERENCE, setups=_I),
    Knob("engine_version", "str", None,
         "none: the engine's current release (vLLM: its V1 engine, at the calibrated fractions)",
         "Inference: the engine's release, e.g. '0.6.3' (in quotes), or v0 / v1 for vLLM's engine generations. "
         "vLLM before 0.8.0 runs its V0 engine, whose CPU work between decode steps is not overlapped with the GPU: "
         "each decode step costs more, by a constant fitted on vLLM's CI latencies (catalog/engines.py "
         "VLLM_V0_DECODE_STEP_SECONDS). TensorRT-LLM through 0.5 builds fp8 models with an fp16 context FMHA: a "
         "prefill's attention runs at the 16-bit rate beside fp8 GEMMs (catalog/engines.py "
         "TRT_FP16_CONTEXT_FMHA_THROUGH). Other releases plan the same (no measured difference is modelled).",
         INFERENCE, settings=False),
    Knob("ttft_percentile", "float", _TTFT_PERCENTILE,
         "the tail a user of the service waits at worst in 100 requests (vLLM's serving benchmark, "
         "benchmarks/benchmark_serving.py, prints mean, median and P99 TTFT); an average would let 1 request in 2 "
         "miss a target the plan says is met",
         "Inference service: the percentile of the time to first token that ttft_ms bounds and the plan reports "
         f"(default {_TTFT_PERCENTILE:g}: p{_TTFT_PERCENTILE:g}), prompts arriving as a Poisson stream.", INFERENCE,
         settings=False),
)

KNOBS: dict[str, Knob] = {k.name: k for k in _ROWS}


def knob(name: str) -> Knob:
    """The table's row for `name` (KeyError names a knob that is not in the table)."""
    return KNOBS[name]


def default(name: str) -> object:
    """The planner's default for the knob `name`."""
    return KNOBS[name].default


def flags() -> tuple[Knob, ...]:
    """The behaviour flags: knobs only a framework preset sets."""
    return tuple(k for k in _ROWS if k.field is None)
