"""What a planned workload stores: its checkpoint, final weights, dataset and the model it starts from, sized by
estimate/storage.py (which has the sources) from the settings the planner chose; and the model files several
workloads share."""

from __future__ import annotations

from dataclasses import replace

from ..catalog.shapes import ModelSpec
from ..estimate import storage as storage_model
from ..units import GiB
from . import speed
from .records import Settings, WorkloadPlan


def workload_storage(w, model: ModelSpec, s: Settings, tokens: int, trainable: int | None,
                     zero_stage: int | None = None) -> storage_model.WorkloadStorage:
    """Checkpoint, final weights and dataset sizes (storage.py has the sources)."""
    params = model.params
    if w.kind == "inference":
        # A served model's weights are read, not made: project space, no final weights to archive.
        weights = storage_model.weights_checkpoint_bytes(params, s.precision)
        return storage_model.WorkloadStorage(
            0, 0, 0, 0, 1, s.concurrency, s.variants, checkpoint_arithmetic="no training checkpoints (inference)",
            dataset_arithmetic="no training data (inference)", model_weights_bytes=weights,
            model_weights_key=(model, s.precision))
    if w.method in ("lora", "qlora"):
        # The adapters as the run keeps them (speed.adapter_precision, what memory counts): fp32 under PEFT's
        # mixed precision, 4 + 8 = 12 B/param with AdamW; bf16 under pure 16-bit training (torchtune), no master
        # copy and bf16 moments, 2 + 4 = 6.
        adapters = speed.adapter_precision(s, speed.training_precision(w.method, s))
        ckpt = storage_model.lora_checkpoint_size(trainable, adapters, s.optimizer, master_weights=s.mixed_precision)
        final = storage_model.weights_checkpoint_bytes(trainable, adapters)
    else:
        # The checkpoint holds the parameters as the run keeps them (storage.py): fp32 where the framework trains
        # fp32 parameters (autocast over them, Hugging Face Trainer; FSDP2's fp32 sharded parameters, torchtitan:
        # config_manager.py mixed_precision_param bf16 is the compute cast only), with no separate master copy;
        # pure 16-bit training (mixed_precision false) saves 16-bit moments and no master.
        fp32_params = s.mixed_precision and (s.autocast_fp32_params or s.fsdp_fp32_params)
        # The Trainer under ZeRO may run DeepSpeed, whose checkpoint holds 16-bit weights + fp32 master + moments
        # (14 B/param), or FSDP with fp32 parameters (12): the larger checkpoint, fp32 final weights.
        deepspeed_possible = s.autocast_fp32_params and bool(zero_stage)
        ckpt = storage_model.checkpoint_size(params, "fp32" if fp32_params and not deepspeed_possible else s.precision,
                                             s.optimizer, master_weights=s.mixed_precision)
        final = (storage_model.weights_checkpoint_bytes(params, "fp32") if fp32_params and s.precision != "fp32"
                 else ckpt.weights_bytes)
    epochs = w.data.epochs if w.data is not None else 1
    unique_tokens = round(tokens / epochs)
    # An unknown vocabulary is assumed above 65,536 ids: 4-byte token ids, the larger choice.
    data = storage_model.dataset_size(unique_tokens, model.vocab or 2**17)
    text = (f"{unique_tokens:,} unique tokens × {data.token_id_bytes} B per token id = "
            f"{data.tokenized_bytes / GiB:,.2f} GiB tokenized; × {data.raw_bytes_per_token:g} B per token ≈ "
            f"{data.raw_text_bytes / GiB:,.2f} GiB raw text")
    return storage_model.WorkloadStorage(
        ckpt.full_state_bytes, final, data.tokenized_bytes, data.raw_text_bytes, s.checkpoints_retained,
        s.concurrency, s.variants,
        checkpoint_arithmetic=f"{params if w.method not in ('lora', 'qlora') else trainable:,} params × {ckpt.basis}",
        checkpoint_sources=ckpt.sources,
        dataset_arithmetic=text,
        # A fine-tune starts from the published checkpoint, downloaded at its precision; pretraining from none.
        model_weights_bytes=storage_model.weights_checkpoint_bytes(params, s.precision) if w.kind == "finetune" else 0,
        model_weights_key=(model, s.precision) if w.kind == "finetune" else None)


def with_shared_models(plans: list[WorkloadPlan]) -> list[WorkloadPlan]:
    """The plans, each whose model file (the same model at the same precision) an earlier one already stores
    marked as reading that copy (storage.share_model_weights): project space counts a model file once."""
    shared = iter(storage_model.share_model_weights([(p.name, p.storage) for p in plans if p.storage is not None]))
    return [replace(p, storage=next(shared)) if p.storage is not None else p for p in plans]
