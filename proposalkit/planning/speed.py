"""How fast a training run or batch job goes, and where the figure comes from: a pilot measured on the GPUs
planned, a pilot carried to other GPUs (two pilots' scaling efficiency across counts; another GPU type or count by
the step-time model's rates on both setups), or the estimate (the step-time model's parts, or FLOPs at a given MFU);
and the training setup the step time and the memory are estimated on.

search.py costs every configuration it tries at the rate ``throughput`` gives it.
"""

from __future__ import annotations

import dataclasses

from ..catalog import GPUSpec
from ..catalog.modules import DEFAULT_ADAPTER_PRECISION
from ..catalog.shapes import ModelSpec
from ..estimate.flops import (
    QLORA_SPEED_FACTOR, QLORA_SPEED_REFERENCES, QLORA_SPEED_SOURCE,
    flops_throughput, recompute_mfu, scale_pilot, training_flops_per_token,
)
from ..estimate.memory import TrainingSetup
from ..estimate.model_states import model_states
from ..estimate.step_time import (
    COMPUTE_FRACTION_REFERENCES, COMPUTE_FRACTION_SOURCE, MAMF_FRACTION, StepTime, matmul_fraction, training_step,
)
from ..knobs import KNOBS
from ..units import product, rate_shown, rate_text, ratio_shown, ratio_text
from . import pilots
from .derivation import step_summary, step_text
from .records import Settings, Throughput

# The knobs a training estimate takes (proposalkit/knobs.py), passed from Settings by name.
TRAINING_KNOBS = tuple(k.name for k in KNOBS.values() if "training" in k.setups)
# How a training pilot carries to another GPU type or count (carried_throughput): by the step-time model's rates
# on both setups, so that only the matmuls scale with the maximum achievable matmul rate (its share of the dense
# peak differs by GPU: step_time.matmul_fraction), the memory-bound kernels with the HBM bandwidth, the tensor-
# parallel collectives with the links and the host's launches not at all. The peak ratio alone carried
# llm-foundry's MPT-7B rate from 8 A100-80GB to 8 H100-80GB 38% above the measured one, one fraction of the peak
# on both 26% (docs/validation.md D-FOUNDRY-6>D-FOUNDRY-1).
CARRY_RULE = ("in the model the matmuls scale with the maximum achievable matmul rate, the memory-bound kernels with "
              "the HBM bandwidth, the collectives with the links and the host's launches not at all")


def training_precision(method: str, s: Settings) -> str:
    """The precision the training step computes in: QLoRA's dequantized base runs in bf16."""
    return "bf16" if method == "qlora" else s.precision


def adapter_precision(s: Settings, precision: str) -> str:
    """The dtype of LoRA adapters (memory counts them in it and the checkpoint saves them in it): pure 16-bit
    training keeps them in the compute dtype (torchtune; artidoro/qlora qlora.py casts each LoraLayer to bf16),
    not PEFT's fp32 upcast; otherwise the workload's lora setting (PEFT's default, fp32)."""
    if not s.mixed_precision and precision != "fp32":
        return precision
    return s.lora.adapter_precision if s.lora is not None else DEFAULT_ADAPTER_PRECISION


def training_setup(w, s: Settings, count: int, zero_stage: int | None, checkpointing: bool | None) -> TrainingSetup:
    """The training step's configuration on `count` GPUs at this ZeRO stage and checkpointing (the estimates'
    record: memory and step time read the same one)."""
    method = w.method or "full"
    model_parallel = s.tensor_parallel * s.pipeline_parallel
    precision = training_precision(method, s)
    lora = s.lora
    if lora is not None:
        lora = dataclasses.replace(lora, adapter_precision=adapter_precision(s, precision))
    # Every training knob as the planner settled it; the configuration tried here sets the rest.
    knobs = {name: getattr(s, name) for name in TRAINING_KNOBS}
    knobs.update(precision=precision, zero_stage=zero_stage, activation_checkpointing=checkpointing, lora=lora,
                 optimizer_impl=_impl_at(s.optimizer_impl, zero_stage),
                 autocast_fp32_params=s.autocast_fp32_params and method == "full" and s.mixed_precision)
    return TrainingSetup(method=method, data_parallel=count // model_parallel, flag_sources=s.flag_sources,
                         **knobs)


def _impl_at(impl: str, zero_stage: int | None) -> str:
    """DeepSpeed runs BF16_Optimizer without ZeRO only; at stages 1-3 its ZeRO optimizers (input/frameworks.py)."""
    return "torch" if impl == "fp32-gradient-buffer" and zero_stage else impl


# ----------------------------------------------------------------- throughput

def mfu(w, notes: list[str]) -> tuple[float | None, str, tuple[str, ...]]:
    """(the workload's own MFU, what it is, its sources), or (None, the step-time model's compute fraction in
    words, its sources) when the workload gives none: then the step is timed part by part (step_time.py)."""
    if w.mfu is not None:
        if w.activation_checkpointing is not None:
            return w.mfu, (f"{w.mfu:.2f} given in the workload file, taken as measured with its activation "
                           "checkpointing setting (a published MFU includes its recompute)"), ()
        return w.mfu, f"{w.mfu:.2f} given in the workload file", ()
    rate = f"{MAMF_FRACTION:.2f} of the GPU's maximum achievable matmul rate (Bekman's MAMF table, per GPU)"
    if w.method == "qlora":
        return (None, f"matmuls at {rate} × {QLORA_SPEED_FACTOR:.3f} for NF4 dequantization "
                f"({QLORA_SPEED_SOURCE}); {MAMF_FRACTION:.2f}: {COMPUTE_FRACTION_SOURCE}",
                QLORA_SPEED_REFERENCES + COMPUTE_FRACTION_REFERENCES)
    return None, f"matmuls at {rate}: {COMPUTE_FRACTION_SOURCE}", COMPUTE_FRACTION_REFERENCES


def throughput(model: ModelSpec, w, s: Settings, gpu: GPUSpec, count: int, checkpointing: bool | None,
                gpus: dict[str, GPUSpec], mfu: tuple[float | None, str, tuple[str, ...]],
                zero_stage: int | None = None) -> Throughput:
    if w.kind == "inference" and w.tokens is None:
        return Throughput(None, "service", f"{w.hours:,.0f} h × {count} GPU{'s' if count > 1 else ''}")
    pilot = w.throughput
    two = pilots.scaling(w)
    if two is not None:     # two pilot logs on two GPU counts: their scaling efficiency, not linear scaling
        return two_scale_throughput(model, w, s, two, gpu, count, gpus, checkpointing, zero_stage)
    if pilot is not None:
        if pilot.gpu == gpu.id and pilot.gpus == count:
            tps = pilot.tokens_per_second
            return Throughput(tps, "pilot", f"{tps:,.0f} tokens/s measured on {count}× {gpu.id} (pilot)")
        source = gpus[pilot.gpu]
        if w.kind == "inference":
            scaled = scale_pilot(pilot.tokens_per_second, from_gpu=source.id, from_count=pilot.gpus,
                                 from_rate=source.memory_bandwidth, to_gpu=gpu.id, to_count=count,
                                 to_rate=gpu.memory_bandwidth, rate_name="memory bandwidth")
            return Throughput(scaled.tokens_per_second, "pilot-extrapolated", scaled.rule)
        return carried_throughput(model, w, s, pilot.tokens_per_second, source, pilot.gpus, gpu, count,
                                  checkpointing, zero_stage)
    fpt = training_flops_per_token(model, w.method or "full", s.seq_len, checkpointing, s.selective_policy)
    base, source, cited = mfu
    if base is None:
        return stepped_throughput(model, w, s, gpu, count, checkpointing, zero_stage, fpt, source, cited)
    # A workload's own MFU is taken as measured with its own checkpointing setting (published
    # MFUs include their recompute), unless the planner turned checkpointing on to fit: then
    # the recompute is charged on top of it.
    charged = bool(fpt.recompute) and w.activation_checkpointing is None
    effective = recompute_mfu(base, fpt) if charged else base
    tps = flops_throughput(fpt, count, gpu.peak_16bit_flops, effective)
    derivation = (f"{count} GPU{'s' if count > 1 else ''} × {gpu.peak_16bit_flops / 1e12:,.0f} TFLOP/s × "
                  f"MFU {effective:.3f} ÷ "
                  f"{fpt.model / 1e9:,.2f} GFLOP/token = {tps:,.0f} tokens/s")
    return Throughput(tps, "flops", derivation, effective, source, fpt, mfu_base=base if charged else None,
                      sources=cited + fpt.sources)


def stepped_throughput(model: ModelSpec, w, s: Settings, gpu: GPUSpec, count: int, checkpointing: bool | None,
                       zero_stage: int | None, fpt, source: str, cited: tuple[str, ...]) -> Throughput:
    """The rate from the step's parts (estimate/step_time.py): matmuls, memory-bound kernels, tensor-parallel
    collectives, and the host's launches as a floor. The MFU it implies is reported, not assumed."""
    step, fraction = modelled_step(model, w, s, gpu, count, checkpointing, zero_stage, fpt)
    tps = step.tokens_per_second
    implied = tps * fpt.model / (count * gpu.peak_16bit_flops)
    return Throughput(tps, "flops", step_text(step, gpu, fpt, fraction, implied), implied, source, fpt,
                      sources=cited + fpt.sources + step.references, step=step,
                      summary=step_summary(step, implied))


def modelled_step(model: ModelSpec, w, s: Settings, gpu: GPUSpec, count: int, checkpointing: bool | None,
                  zero_stage: int | None, fpt) -> tuple[StepTime, float]:
    """(the step on `count` GPUs of `gpu` as estimate/step_time.py times it, the matmuls' fraction of the peak)."""
    setup = training_setup(w, s, count, zero_stage or 0, checkpointing)
    fraction = matmul_fraction(gpu) * (QLORA_SPEED_FACTOR if w.method == "qlora" else 1)
    step = training_step(model, setup, fpt, gpu, count, model_states(model, setup), fraction,
                         autocast=s.autocast_fp32_params and s.mixed_precision)
    return step, fraction


def carried_throughput(model: ModelSpec, w, s: Settings, rate: float, source: GPUSpec, from_count: int,
                       gpu: GPUSpec, count: int, checkpointing: bool | None, zero_stage: int | None) -> Throughput:
    """A training rate measured on `from_count` GPUs of `source`, carried to `count` GPUs of `gpu` by the step-time
    model (CARRY_RULE): the measured rate × the modelled rate on the planned GPUs ÷ the modelled rate on the
    pilot's. The pilot's setup is the workload's as planned (micro-batch, ZeRO stage, checkpointing) on its own
    GPUs; a pilot on no whole number of model copies (t·p·ep·cp GPUs each, as search.py counts them) ran another
    layout, and is carried by the peak rates and counts instead (estimate/flops.py scale_pilot)."""
    copy = s.tensor_parallel * s.pipeline_parallel * s.expert_parallel * s.context_parallel
    if from_count % copy:
        scaled = scale_pilot(rate, from_gpu=source.id, from_count=from_count, from_rate=source.peak_16bit_flops,
                             to_gpu=gpu.id, to_count=count, to_rate=gpu.peak_16bit_flops,
                             rate_name="dense 16-bit peak")
        return Throughput(scaled.tokens_per_second, "pilot-extrapolated",
                          f"{scaled.rule} (the pilot's {from_count} GPUs are no whole number of model copies of "
                          f"{copy}: it ran another layout, which the step-time model cannot time)")
    fpt = training_flops_per_token(model, w.method or "full", s.seq_len, checkpointing, s.selective_policy)
    to, _ = modelled_step(model, w, s, gpu, count, checkpointing, zero_stage, fpt)
    was, _ = modelled_step(model, w, s, source, from_count, checkpointing, zero_stage, fpt)
    # Worked from the printed figures: the modelled rates as printed, their ratio to units.RATIO_DECIMALS, the
    # measured rate as printed × that ratio.
    to_rate, was_rate = rate_shown(to.tokens_per_second), rate_shown(was.tokens_per_second)
    ratio = ratio_shown(to_rate, was_rate)
    carried = product(rate_shown(rate), ratio)
    text = (f"{rate_text(rate)} tokens/s measured on {from_count}× {source.id} × (the step-time model's "
            f"{rate_text(to_rate)} tokens/s on {count}× {gpu.id} ÷ its {rate_text(was_rate)} on {from_count}× "
            f"{source.id} = {ratio_text(ratio)}) = {rate_text(carried)} tokens/s on {count}× {gpu.id} ({CARRY_RULE})")

    def written(step: StepTime, on: GPUSpec) -> str:
        implied = step.tokens_per_second * fpt.model / (step.gpus * on.peak_16bit_flops)
        return step_text(step, on, fpt, step.compute_fraction, implied)

    parts = ((f"Step time, {count}× {gpu.id} (planned)", written(to, gpu)),
             (f"Step time, {from_count}× {source.id} (the pilot's)", written(was, source)))
    return Throughput(carried, "pilot-extrapolated", text,
                      sources=COMPUTE_FRACTION_REFERENCES + fpt.sources + to.references, carried=parts)


def two_scale_throughput(model: ModelSpec, w, s: Settings, sc: pilots.Scaling, gpu: GPUSpec, count: int,
                         gpus: dict[str, GPUSpec], checkpointing: bool | None, zero_stage: int | None) -> Throughput:
    """The rate on `count` GPUs of `gpu` from two pilots (planning/pilots.py's rule); on another GPU type, carried
    there at the same count as one pilot is (inference by the memory bandwidths, training by carried_throughput)."""
    for run in (sc.small, sc.large):
        if run.gpu == gpu.id and run.gpus == count:
            return Throughput(run.tokens_per_second, "pilot",
                              f"{run.tokens_per_second:,.0f} tokens/s measured on {count}× {gpu.id} (pilot {run.log})")
    per_gpu = rate_shown(sc.per_gpu(count))      # the rate worked from the per-GPU rate as printed
    rate = product(per_gpu, count)
    text = (f"{sc.text()}; on {count} GPUs {rate_text(per_gpu)} per GPU × {count} = {rate_text(rate)} tokens/s on "
            f"{count}× {sc.small.gpu} ({pilots.SCALING_RULE}, not linear scaling)")
    if gpu.id == sc.small.gpu:
        return Throughput(rate, "pilot-extrapolated", text)
    source = gpus[sc.small.gpu]
    if w.kind != "inference":
        carried = carried_throughput(model, w, s, rate, source, count, gpu, count, checkpointing, zero_stage)
        return dataclasses.replace(carried, derivation=f"{text}; {carried.derivation}")
    ratio = ratio_shown(gpu.memory_bandwidth, source.memory_bandwidth)
    rate = scale_pilot(rate, from_gpu=source.id, from_count=count, from_rate=source.memory_bandwidth,
                       to_gpu=gpu.id, to_count=count, to_rate=gpu.memory_bandwidth,
                       rate_name="memory bandwidth").tokens_per_second
    text += (f"; × (memory bandwidth {gpu.id} ÷ {source.id} = {ratio_text(ratio)}) = {rate_text(rate)} tokens/s on "
             f"{count}× {gpu.id}")
    return Throughput(rate, "pilot-extrapolated", text)
