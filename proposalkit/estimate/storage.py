"""Storage a campaign needs: checkpoints, datasets, peak scratch; project, scratch, archive.

Pure: plain numbers in (parameters, adapter parameters, tokens, vocabulary,
checkpoints retained, concurrent runs), integer bytes out. Nothing here knows
about ModelSpec or the workload schema, so the planner can call it with
whatever it computed. Formatting (GB, GiB) happens in the report layer.

Bytes per parameter of a checkpoint (each constant below carries its source):

* weights only: params × bytes of the saved precision (bf16: 2).
* full training state, mixed-precision AdamW: 16-bit weights (2) + fp32 master
  weights (4) + fp32 Adam first and second moments (4 + 4) = 14 bytes/param.
  Gradients are not saved: they are recomputed from the next batch and zeroed
  every step, so resuming needs only weights, optimizer state and the
  step/scheduler/RNG counters (a few kB) — PyTorch's optimizer ``state_dict``
  holds ``exp_avg`` and ``exp_avg_sq`` per parameter, not gradients. The same
  accounting in memory is the ZeRO paper's 2Ψ + 2Ψ + KΨ with K = 12
  (Rajbhandari et al. 2020, §3.1); the checkpoint drops the 2Ψ of fp16 gradients.
* pure 16-bit training (mixed_precision false: torchtune) saves no master copy
  and its moments in the weights' dtype: AdamW in bf16 is 2 + 2 + 2 = 6
  bytes/param. torchtune's recipes save ``self._model.state_dict()`` (bf16
  parameters) and ``self._optimizer.state_dict()`` (pytorch/torchtune @
  bd2a0fc7c recipes/full_finetune_single_device.py save_checkpoint), and
  torch's AdamW creates each moment with ``torch.zeros_like(p)``, the
  parameter's dtype (pytorch/pytorch @ dc80ccde torch/optim/adam.py
  _init_group). A run whose parameters are fp32 (autocast over fp32
  parameters, FSDP2's fp32 sharded parameters) saves them at 4 bytes with no
  separate master copy: the planner passes precision fp32.
* optimizer state per trainable parameter is precision.optimizer_state_bytes(),
  the same figure memory.py counts on the GPU: AdamW 8, SGD with momentum 4,
  bitsandbytes 8-bit AdamW 2 + 8/256 (its per-block fp32 absmax is in the
  optimizer's state_dict, so it is saved too).
* LoRA: only the adapter is saved (the frozen base model is re-downloaded);
  PEFT keeps trainable adapter weights in fp32 (``autocast_adapter_dtype=True``
  upcasts bf16/fp16 adapters to float32), so adapter weights are 4 bytes/param
  and the full adapter state with AdamW 4 + 8 = 12 bytes/param.

Cross-check (tests/test_storage.py): BLOOM-176B's model card lists a 329 GB
bf16 checkpoint and 2.3 TB with optimizer states. 176,247,271,424 params × 2 B
= 352.5 × 10^9 B = 328.3 GiB, and × 14 B = 2.244 TiB: the card's sizes are
binary units rounded up, as ``du -h`` prints them (⌈328.3⌉ = 329 G, ⌈2.244⌉ to
one decimal = 2.3 T). In decimal units they would be 352 GB and 2.5 TB.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction

from ..catalog.modules import DEFAULT_ADAPTER_PRECISION as LORA_ADAPTER_PRECISION   # PEFT: fp32 adapters
from ..precision import FP32_BYTES, optimizer_state_bytes
from ..units import bytes_of_gib, bytes_per_element, gib_shown

# fp32 master copy of the weights kept by mixed-precision training
# (Micikevicius et al. 2018, "Mixed Precision Training", §3.1; ZeRO §3.1).
FP32_MASTER_BYTES_PER_PARAM = FP32_BYTES

# Token ids on disk: uint16 when every id fits (vocab ≤ 65,536), else 4 bytes
# (uint32/int32). nanoGPT's data/openwebtext/prepare.py writes GPT-2 tokens as
# np.uint16 "since enc.max_token_value == 50256 is < 2**16".
UINT16_MAX_VOCAB = 2**16

# Raw text per token: ~4 characters of common English text per token (OpenAI,
# "What are tokens and how to count them": "1 token ~= 4 chars in English"),
# 1 byte per character for ASCII in UTF-8. Other languages and code differ.
RAW_TEXT_BYTES_PER_TOKEN = 4.0



@dataclass(frozen=True)
class CheckpointSize:
    """One checkpoint, weights only and with the full training state, in bytes."""

    weights_bytes: int
    full_state_bytes: int
    weights_bytes_per_param: Fraction
    full_state_bytes_per_param: Fraction
    basis: str              # the bytes-per-parameter sum, written out
    sources: tuple[str, ...] = ()   # reference ids the basis cites (catalog/references.py)


@dataclass(frozen=True)
class DatasetSize:
    """A training set's size on disk, tokenized and as raw text."""

    tokens: int
    token_id_bytes: int     # 2 (uint16) or 4 (uint32)
    tokenized_bytes: int
    raw_text_bytes: int     # estimate at RAW_TEXT_BYTES_PER_TOKEN
    raw_bytes_per_token: float


@dataclass(frozen=True)
class WorkloadStorage:
    """What one workload stores, in bytes: the planner makes it, the plan carries
    it (WorkloadPlan.storage), render and the plan JSON read it."""

    checkpoint_bytes: int
    """One checkpoint a restart reads (full training state; LoRA: adapters)."""
    final_weights_bytes: int
    """The weights one variant keeps at the end."""
    dataset_bytes: int = 0
    """Tokenized dataset (unique tokens, not epochs)."""
    dataset_raw_bytes: int = 0
    """Raw text, estimated at RAW_TEXT_BYTES_PER_TOKEN."""
    retained: int = 1
    """Checkpoints kept on scratch per run."""
    concurrency: int = 1
    """Runs at once."""
    variants: int = 1
    """Runs in all (each keeps its final weights)."""
    checkpoint_arithmetic: str = ""
    """How checkpoint_bytes was computed, for the report."""
    checkpoint_sources: tuple[str, ...] = ()
    """The reference ids checkpoint_arithmetic cites (catalog/references.py)."""
    dataset_arithmetic: str = ""
    """How dataset_bytes and dataset_raw_bytes were computed."""
    model_weights_bytes: int = 0
    """The weights the workload starts from (a fine-tune's base model, a served model), downloaded once and
    kept in project space; not archived (the published checkpoint can be downloaded again)."""
    model_weights_key: Hashable = None
    """What names that file: the model and the precision it is stored at (the planner's choice). Workloads
    with equal keys read one copy (share_model_weights)."""
    model_weights_shared_with: str | None = None
    """The earlier workload whose copy of the same model file this one reads: project space counts it there,
    once, not here (share_model_weights)."""

    # The sums below are worked from each size as printed (units.gib_shown, GiB to 0.01), as the hours are:
    # 99.30 GiB × 3 + 0.76 GiB is the 298.66 GiB a reader gets from the supplement's storage table, where the
    # exact bytes gave 298.65.

    @functools.cached_property   # frozen, so computed once (plan JSON, report and totals ask)
    def peak_scratch_bytes(self) -> int:
        """Scratch at its fullest (peak_scratch_bytes): the checkpoints retained by the runs at once + the
        dataset, from the printed sizes."""
        checkpoints = gib_shown(self.checkpoint_bytes) * _count("retained", self.retained, minimum=1) \
            * _count("concurrency", self.concurrency, minimum=1)
        return bytes_of_gib(checkpoints + gib_shown(_count("dataset_bytes", self.dataset_bytes)))

    @property
    def final_weights_total_bytes(self) -> int:
        """The final weights of every variant (printed size × runs)."""
        return bytes_of_gib(gib_shown(self.final_weights_bytes) * _count("variants", self.variants, minimum=1))

    @property
    def model_weights_counted_bytes(self) -> int:
        """The model weights this workload adds to project space: none where an earlier workload's copy of
        the same file is shared."""
        return 0 if self.model_weights_shared_with is not None else self.model_weights_bytes

    @property
    def project_bytes(self) -> int:
        """Kept for the life of the allocation: raw and tokenized datasets, the model weights it starts from
        (unless shared) and every variant's final weights."""
        return bytes_of_gib(sum(map(gib_shown, (self.dataset_raw_bytes, self.dataset_bytes,
                                                self.model_weights_counted_bytes, self.final_weights_total_bytes))))

    @property
    def archive_bytes(self) -> int:
        """Kept afterwards to reproduce or reuse the results: every variant's final weights + the raw
        dataset (tokenized data can be regenerated from raw text)."""
        return bytes_of_gib(gib_shown(self.final_weights_total_bytes) + gib_shown(self.dataset_raw_bytes))


@dataclass(frozen=True)
class StorageTotals:
    """Project, scratch and archive space over all workloads, in bytes, and what each holds."""

    project_bytes: int
    """Σ WorkloadStorage.project_bytes (a model file shared by several workloads once)."""
    scratch_bytes: int
    """max WorkloadStorage.peak_scratch_bytes: the workloads run one after another (storage_totals)."""
    archive_bytes: int
    """Σ WorkloadStorage.archive_bytes."""
    data_bytes: int = 0
    """Of project space: the datasets, tokenized and raw."""
    model_weights_bytes: int = 0
    """Of project space: the model files the workloads start from, each once."""
    final_weights_bytes: int = 0
    """Of project space and the archive: every run's final weights."""
    raw_data_bytes: int = 0
    """Of the archive: the raw datasets."""


def _count(name: str, value: int | float, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name}: expected a number, got {value!r}")
    if value < minimum or value != int(value):
        raise ValueError(f"{name}: expected a whole number ≥ {minimum}, got {value!r}")
    return int(value)


def _bytes(params: int, per_param: Fraction) -> int:
    """params × bytes/param, rounded up to whole bytes (int4 is half a byte, never 0)."""
    return math.ceil(params * per_param)


def weights_checkpoint_bytes(params: int, precision: str = "bf16") -> int:
    """Weights-only checkpoint: params × bytes of the saved precision (bf16: 2 B/param)."""
    params = _count("params", params)
    return _bytes(params, bytes_per_element(precision))


def training_state_bytes_per_param(precision: str = "bf16", optimizer: str = "adamw",
                                   master_weights: bool = True) -> Fraction:
    """Bytes per trainable parameter of a resumable checkpoint.

    Weights in their training precision, plus an fp32 master copy when that
    precision is below fp32 (mixed precision), plus the optimizer state.
    bf16 + AdamW: 2 + 4 + 8 = 14. fp32 + AdamW: 4 + 8 = 12. Pure 16-bit
    (master_weights False): no master, moments in the weights' dtype, bf16 +
    AdamW 2 + 4 = 6. No gradients (see the module docstring).
    """
    weights = bytes_per_element(precision)
    mixed = weights < FP32_BYTES and master_weights
    master = FP32_MASTER_BYTES_PER_PARAM if mixed else 0
    return weights + master + optimizer_state_bytes(optimizer, FP32_BYTES if mixed or weights >= FP32_BYTES else weights)


def full_checkpoint_bytes(params: int, precision: str = "bf16", optimizer: str = "adamw") -> int:
    """Full training-state checkpoint of a full fine-tune or pretraining run."""
    params = _count("params", params)
    return _bytes(params, training_state_bytes_per_param(precision, optimizer))


def _basis(precision: str, optimizer: str, master_weights: bool = True) -> str:
    weights = bytes_per_element(precision)
    parts = [f"{_num(weights)} ({precision} weights)"]
    if weights < FP32_BYTES and master_weights:
        parts.append(f"{FP32_MASTER_BYTES_PER_PARAM} (fp32 master weights)")
    total = training_state_bytes_per_param(precision, optimizer, master_weights)
    state = total - weights - (FP32_MASTER_BYTES_PER_PARAM if weights < FP32_BYTES and master_weights else 0)
    pure = "" if master_weights or weights >= FP32_BYTES else f", pure {precision}: no master copy"
    parts.append(f"{_num(state)} ({optimizer} state{pure})")
    return " + ".join(parts) + f" = {_num(total)} bytes/param; gradients are not saved"


def _num(x: Fraction | int | float) -> str:
    return f"{float(x):g}"


@functools.lru_cache(maxsize=256)   # pure; a proposal repeats its models
def checkpoint_size(params: int, precision: str = "bf16", optimizer: str = "adamw",
                    master_weights: bool = True) -> CheckpointSize:
    """Checkpoint of a full fine-tune or pretraining run: weights only and full state."""
    params = _count("params", params)
    full = training_state_bytes_per_param(precision, optimizer, master_weights)
    return CheckpointSize(
        weights_bytes=weights_checkpoint_bytes(params, precision),
        full_state_bytes=_bytes(params, full),
        weights_bytes_per_param=bytes_per_element(precision),
        full_state_bytes_per_param=full,
        basis=_basis(precision, optimizer, master_weights),
        # an fp32 master copy beside 16-bit weights: mixed-precision training (Micikevicius et al. 2018)
        sources=("micikevicius-2018",) if bytes_per_element(precision) < FP32_BYTES and master_weights else (),
    )


def lora_checkpoint_size(adapter_params: int, adapter_precision: str = LORA_ADAPTER_PRECISION,
                         optimizer: str = "adamw", master_weights: bool = True) -> CheckpointSize:
    """Checkpoint of a LoRA/QLoRA run: the adapter alone (the frozen base is not saved).

    Weights only = adapter params × bytes of the adapter precision (fp32 in PEFT
    by default); full state = + the optimizer state of the adapter params
    (fp32 adapters need no separate master copy): fp32 + AdamW = 4 + 8 = 12 B/param. Pure 16-bit training
    (master_weights False, torchtune) saves bf16 adapters and bf16 moments: 2 + 4 = 6 B/param.
    """
    adapter_params = _count("adapter_params", adapter_params)
    size = checkpoint_size(adapter_params, adapter_precision, optimizer, master_weights)
    return CheckpointSize(size.weights_bytes, size.full_state_bytes, size.weights_bytes_per_param,
                          size.full_state_bytes_per_param,
                          "LoRA adapter only (frozen base model not saved): " + size.basis, ("hu-2021",) + size.sources)


def token_id_bytes(vocab_size: int) -> int:
    """Bytes per stored token id: 2 (uint16) for a vocabulary of ≤ 65,536 ids, else 4."""
    vocab_size = _count("vocab_size", vocab_size, minimum=1)
    return 2 if vocab_size <= UINT16_MAX_VOCAB else 4


def dataset_size(tokens: int | float, vocab_size: int,
                 raw_bytes_per_token: float = RAW_TEXT_BYTES_PER_TOKEN) -> DatasetSize:
    """A dataset's size from its token count: tokenized (ids on disk) and raw text (estimate).

    ``tokens`` is the unique training tokens stored once (not tokens × epochs).
    """
    tokens = _count("tokens", tokens)
    width = token_id_bytes(vocab_size)
    if not (raw_bytes_per_token > 0 and math.isfinite(raw_bytes_per_token)):
        raise ValueError(f"raw_bytes_per_token: expected a positive number, got {raw_bytes_per_token!r}")
    return DatasetSize(
        tokens=tokens,
        token_id_bytes=width,
        tokenized_bytes=tokens * width,
        raw_text_bytes=math.ceil(tokens * raw_bytes_per_token),
        raw_bytes_per_token=raw_bytes_per_token,
    )


def peak_scratch_bytes(checkpoint_bytes: int, retained: int, concurrency: int = 1,
                       dataset_bytes: int = 0) -> int:
    """Peak scratch: checkpoint size × checkpoints retained × concurrent runs (+ the dataset).

    NAIRR community guide, proposal checklist: "peak scratch (checkpoint size ×
    retained × concurrent runs)". The dataset is staged once and shared by the
    concurrent runs.
    """
    checkpoint_bytes = _count("checkpoint_bytes", checkpoint_bytes)
    retained = _count("retained", retained, minimum=1)
    concurrency = _count("concurrency", concurrency, minimum=1)
    dataset_bytes = _count("dataset_bytes", dataset_bytes)
    return checkpoint_bytes * retained * concurrency + dataset_bytes


def share_model_weights(workloads: Sequence[tuple[str, WorkloadStorage]]) -> tuple[WorkloadStorage, ...]:
    """(name, storage) of each workload in order → the storage records, each whose model file (equal
    model_weights_key) an earlier workload already stores marked as sharing that workload's copy: a model file
    is downloaded once per project, not once per workload that starts from it."""
    first: dict[Hashable, str] = {}
    out = []
    for name, st in workloads:
        if st.model_weights_bytes and st.model_weights_key is not None:
            owner = first.setdefault(st.model_weights_key, name)
            if owner != name:
                st = replace(st, model_weights_shared_with=owner)
        out.append(st)
    return tuple(out)


def _gib_sum(sizes: Iterable[int]) -> int:
    return bytes_of_gib(sum((gib_shown(b) for b in sizes), Decimal(0)))


def storage_totals(workloads: Iterable[WorkloadStorage]) -> StorageTotals:
    """Project, scratch and archive totals over workloads (see WorkloadStorage).

    Scratch is the largest workload's peak: the plan's one concurrency assumption is that the workloads
    run one after another (each at its own concurrency), as its calendar time adds their days
    (charges.calendar_days); project and archive space add up, kept for the whole allocation, a model file
    several workloads share counted once (share_model_weights).
    """
    workloads = tuple(workloads)
    return StorageTotals(
        project_bytes=_gib_sum(w.project_bytes for w in workloads),
        scratch_bytes=max((w.peak_scratch_bytes for w in workloads), default=0),
        archive_bytes=_gib_sum(w.archive_bytes for w in workloads),
        data_bytes=_gib_sum(b for w in workloads for b in (w.dataset_bytes, w.dataset_raw_bytes)),
        model_weights_bytes=_gib_sum(w.model_weights_counted_bytes for w in workloads),
        final_weights_bytes=_gib_sum(w.final_weights_total_bytes for w in workloads),
        raw_data_bytes=_gib_sum(w.dataset_raw_bytes for w in workloads),
    )
