"""What request lengths that vary cost a batch job under continuous batching, from first principles (batch.py
applies it; input/lengths.py reads a workload's {mean, p50, p99} as equally likely lengths):

- a sequence holds its slot for as many steps as it generates, so the sequences in the batch at any moment are
  length-biased (the inspection paradox, Feller 1971 §XI.4): the output a slot holder generates is E[o²] ÷ E[o],
  not E[o], and the context it holds, averaged over its steps, E[i] + (E[o²] ÷ E[o] + 1) ÷ 2 instead of
  E[i] + E[o] ÷ 2: more KV cache per sequence, fewer sequences in the pool, more bytes read per step;
- a prompt's attention FLOPs grow with its square, so the prefill is the mean over the lengths, not the prefill
  of the mean length;
- uneven finish times: once no request is left to start, the batch drains. The sequences then running have the
  length-biased residual lives (the equilibrium distribution, P(R > r) = E[(o − r)⁺] ÷ E[o]); the job ends with the
  longest of the batch's, its expected value the residual exceeded with probability 1 ÷ (batch + 1), and those
  steps run at the batch that is left (their tokens ÷ their steps) instead of the full one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Spread:
    """What a batch job's length distributions give continuous batching (see the module's text)."""

    inputs: tuple[float, ...]           # equally likely prompt lengths
    outputs: tuple[float, ...]          # equally likely output lengths

    @property
    def mean_input(self) -> float:
        return sum(self.inputs) / len(self.inputs)

    @property
    def mean_output(self) -> float:
        return sum(self.outputs) / len(self.outputs)

    @property
    def held_output(self) -> float:
        """The output of the sequence holding a slot: E[o²] ÷ E[o] (length-biased)."""
        return sum(o * o for o in self.outputs) / len(self.outputs) / self.mean_output

    @property
    def held_context(self) -> float:
        """The context a slot holds, averaged over its steps: E[i] + (E[o²] ÷ E[o] + 1) ÷ 2."""
        return self.mean_input + (self.held_output + 1) / 2

    def residual_beyond(self, r: float) -> float:
        """P(R > r) of the residual life of a running sequence: E[(o − r)⁺] ÷ E[o]."""
        return sum(max(o - r, 0.0) for o in self.outputs) / len(self.outputs) / self.mean_output

    def longest_residual(self, batch: int) -> float:
        """The expected longest residual life among `batch` running sequences: the r with P(R > r) = 1/(batch + 1)
        (bisection; at most the longest output)."""
        target, low, high = 1 / (batch + 1), 0.0, max(self.outputs)
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if self.residual_beyond(mid) > target else (low, mid)
        return (low + high) / 2

    def longest_output(self, requests: int) -> float:
        """The expected longest of `requests` outputs started together: the quantile 1 − 1/(requests + 1)."""
        ordered = sorted(self.outputs)
        index = min(len(ordered) - 1, math.floor((1 - 1 / (requests + 1)) * len(ordered)))
        return ordered[index]
