"""transformers 4.37-4.45's causal-LM loss beside today's: the bytes per logit at the forward and backward peaks,
measured on CPU.

Optional check, never needed by the package or its tests (needs torch; CPU is enough):

    python benchmarks/transformers_loss.py

The last step of a decoder, written as each version's LlamaForCausalLM computes its loss:
  4.37-4.45 (transformers 4.37.0, 4.40.2, 4.44.2, 4.45.2 on PyPI, models/llama/modeling_llama.py):
    logits = lm_head(h); logits = logits.float(); shift_logits = logits[..., :-1, :].contiguous();
    CrossEntropyLoss()(shift_logits.view(-1, v), shift_labels.view(-1)); the model returns the fp32 logits;
  today (huggingface/transformers @ d0fed636 loss/loss_utils.py ForCausalLMLoss): the model returns its 16-bit
    logits; the loss upcasts them, pads the labels by one instead of slicing the logits, cross_entropy.
Each runs with the model's output dropped before the backward (the Hugging Face Trainer: compute_loss returns
the loss alone) and held through it (a loop's ``output = model(...); output.loss.backward()``). The profiler's
memory events (profile_memory=True) give every allocation and free in order; the peaks before and during the
backward, less the hidden states held throughout, are divided by b·s·v.

On CPU with torch 2.13.0 (h 64, v 4,096, s 257, bf16), bytes per logit, forward / backward:
  micro-batch 2: 4.37 dropped 11.94 / 11.92, held 11.94 / 15.92; today dropped 9.97 / 11.97, held 9.97 / 13.97
  micro-batch 1: 4.37 forward 7.95 (the shifted slice of one sequence is contiguous: no copy), backward as above.
proposalkit (estimate/loss.py): transformers-4.37 12 / 16, standard 10 / 12 (the one-token shift apart).
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

H, V, S = 64, 4096, 257


def peaks(version: str, held: bool, batch: int) -> tuple[float, float]:
    """(forward, backward) peak bytes per logit of the loss, the hidden states apart."""
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(V, H, dtype=torch.bfloat16) * 0.02)
    hidden_in = torch.randn(batch, S, H, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, V, (batch, S))

    def step() -> object:
        hidden = hidden_in * 1                                        # stands for the decoder layers
        logits = F.linear(hidden, weight)
        if version == "4.37":
            logits = logits.float()
            shift_logits = logits[..., :-1, :].contiguous()
            loss = torch.nn.CrossEntropyLoss()(shift_logits.view(-1, V), labels[..., 1:].contiguous().view(-1))
            del shift_logits
        else:
            shift_labels = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
            loss = F.cross_entropy(logits.float().view(-1, V), shift_labels.view(-1), ignore_index=-100)
        output = (loss, logits)
        del logits
        if not held:
            output = None
        loss.backward()
        return output

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = list(prof.profiler.kineto_results.events())
    memory = sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())
    backward_at = min(e.start_ns() for e in events if "Backward" in e.name())
    live = forward = backward = 0
    for event in memory:
        live += event.nbytes()
        if event.start_ns() < backward_at:
            forward = max(forward, live)
        else:
            backward = max(backward, live)
    hidden_bytes = 2 * 2 * batch * S * H                              # the input and the layer's output, bf16
    logits = batch * S * V
    return (forward - hidden_bytes) / logits, (backward - hidden_bytes) / logits


def main() -> None:
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    for version in ("4.37", "today"):
        for held in (False, True):
            forward, backward = peaks(version, held, batch)
            print(f"{version:>5}, output {'held' if held else 'dropped'}: forward {forward:.2f} B/logit, "
                  f"backward {backward:.2f} B/logit (micro-batch {batch})")


if __name__ == "__main__":
    main()
