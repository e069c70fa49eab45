"""Consistency rules of a transformer's shape, one checker for config.json and workload mappings.

Values that each pass their type and range checks can still not make a
model: heads that do not divide hidden (with no head_dim, a head of
hidden // heads values, 0 when heads > hidden, and a 0-byte KV cache),
key/value heads that do not divide the query heads (grouped-query attention
shares each among a whole number of them), more experts per token than
experts (more active than total parameters). Each problem is (key, message),
the key spelt as the user wrote it: `names` maps ModelSpec field → key.
"""

from __future__ import annotations

Problems = list[tuple[str, str]]


def shape_problems(fields: dict, names: dict[str, str]) -> Problems:
    """`fields`: hidden, heads, kv_heads, head_dim (None: hidden / heads) and, optionally, experts and
    experts_per_token (a mixture of experts)."""
    n = {"hidden": "hidden", "heads": "heads", "kv_heads": "kv_heads", "head_dim": "head_dim",
         "experts": "experts", "experts_per_token": "experts_per_token"} | names
    hidden, heads, kv = fields["hidden"], fields["heads"], fields["kv_heads"]
    out = []
    if fields.get("head_dim") is None and hidden % heads:
        out.append((n["heads"], f"does not divide {n['hidden']} (got {heads} heads of {hidden}; each head "
                                f"is {n['hidden']} / {n['heads']} wide: expected a divisor of {hidden}, "
                                f"or {n['head_dim']})"))
    if kv > heads or heads % kv:
        out.append((n["kv_heads"], f"does not divide {n['heads']} (got {kv} key/value heads for {heads} heads; "
                                   "grouped-query attention shares each key/value head among a whole number of "
                                   f"query heads: expected a divisor of {heads})"))
    experts, top_k = fields.get("experts", 1), fields.get("experts_per_token", 1)
    if top_k > experts:
        out.append((n["experts_per_token"], f"more experts per token than experts (got {top_k} of {experts} "
                                            f"{n['experts']}; expected at most {experts})"))
    return out
