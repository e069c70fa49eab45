"""The chunked loss's backward: which output-projection gradients autograd holds at once, measured on CPU.

Optional check, never needed by the package or its tests (needs torch; CPU is enough):

    python benchmarks/chunked_head_grad.py

A toy decoder's last step, built as torchtune builds it with CEWithChunkedOutputLoss: the hidden states are
split into 8 chunks along the sequence and each chunk goes through the output projection (pytorch/torchtune
@ 3e5b0408 torchtune/modules/transformer.py chunked_output), each chunk's 16-bit logits are upcast and put
through cross_entropy(reduction="sum"), the chunk losses are summed and divided by the token count, the logits
are dropped and the loss goes backward (torchtune's recipes `del logits` before `loss.backward()`). The
profiler's memory events (profile_memory=True) give every allocation and free in order; the script prints
the peak of the backward, the operation that reached it, and proposalkit's count of that instant
(phases.head_accumulation_bytes: three v × h gradients; loss.head_backward_bytes: 6/8 of the logit gradients,
2/8 of the hidden-state gradient) beside the tensors already held (the embedding output and hidden states).

On CPU with torch 2.13.0 (h 64, v 4,096, 64 tokens, bf16), tied and untied alike: peak 1,984,524 B at
TBackward0's aten::add, the second chunk's weight gradient added out of place; proposalkit's count
1,984,512 B (the 12 B left are scalars: the loss and its gradient). All 8 chunks' losses go backward before
the first projection does, and the later chunks add in place; with tied weights the embedding's gradient
comes last, added in place, after the head's have been summed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proposalkit.estimate.loss import CHUNKED_LOSS_CHUNKS, head_backward_bytes  # noqa: E402

H, V, S, B = 64, 4096, 64, 1
E = 2                       # bf16
CHUNKS = CHUNKED_LOSS_CHUNKS


def backward_peak(tied: bool) -> tuple[int, str]:
    """(peak live bytes since the profiler started, the innermost operation at that allocation)."""
    torch.manual_seed(0)
    embedding = torch.nn.Parameter(torch.randn(V, H, dtype=torch.bfloat16) * 0.02)
    output = embedding if tied else torch.nn.Parameter(torch.randn(V, H, dtype=torch.bfloat16) * 0.02)
    layer = torch.nn.Parameter(torch.randn(H, H, dtype=torch.bfloat16) * 0.02)
    tokens, labels = torch.randint(0, V, (B, S)), torch.randint(0, V, (B, S))

    def step():
        hidden = F.embedding(tokens, embedding) @ layer            # stands for the decoder layers
        logits = [F.linear(chunk, output) for chunk in hidden.chunk(CHUNKS, dim=1)]
        total = 0.0
        for chunk, target in zip(logits, labels.chunk(CHUNKS, dim=1)):
            total = total + F.cross_entropy(chunk.reshape(-1, V).float(), target.reshape(-1), reduction="sum")
        loss = total / labels.numel()
        del logits, chunk
        loss.backward()

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = list(prof.profiler.kineto_results.events())
    memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
    ops = [e for e in events if e.name() != "[memory]"]
    live = peak = 0
    where = ""
    for event in memory:
        live += event.nbytes()
        if live > peak:
            peak = live
            at = event.start_ns()
            inner = sorted((o for o in ops if o.start_ns() <= at <= o.end_ns()), key=lambda o: o.start_ns())
            where = " > ".join(o.name() for o in inner[-2:])
    return peak, where


def main() -> None:
    held = 2 * E * B * S * H                                    # the embedding output and the hidden states
    counted = 3 * V * H * E + head_backward_bytes("chunked", B * S, H, V, E, E) + held
    for tied in (False, True):
        peak, where = backward_peak(tied)
        print(f"{'tied' if tied else 'untied'}: peak {peak:,} B at {where}; proposalkit counts {int(counted):,} B")


if __name__ == "__main__":
    main()
