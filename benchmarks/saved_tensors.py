"""What autograd saves for the backward: transformers' Llama decoder layer, eager and under torch.compile,
and the cross-entropy on 16-bit logits, eager and compiled, beside proposalkit's per-layer terms.

Optional check, never needed by the package or its tests (needs torch and transformers; CPU is enough):

    python benchmarks/saved_tensors.py

A random-initialised layer from a LlamaConfig (no weights are downloaded) runs one bf16 forward under
torch.autograd.graph.saved_tensors_hooks; the bytes of every distinct storage it saves, parameters and the
rotary cos/sin buffers apart, are set beside activations.activation_terms_per_layer() with the eager terms
(estimate/kernels.py) and without them. The hooks also see what a torch.compile'd graph saves (AOTAutograd
saves through an autograd.Function), which is how torchtune's activation offloading works with compile.
Neither count includes each norm's per-row rstd (4 B per token and norm, fused and eager alike).

On CPU with torch 2.14.1 and transformers 5.23.0 (per token; proposalkit's terms in brackets): eager with
a padded batch's 4-D mask 11,816 [eager 11,808]; compiled with the mask 8,360 [compiled 8,352: the fused
count + the K/V copies]; without a mask transformers passes enable_gqa and copies nothing: eager 11,048,
compiled 7,592 (proposalkit counts the copies, as a workload does not say whether batches are padded);
torchtune's expand + flatten before causal SDPA: 2,592 eager and compiled alike (the expanded K and V
saved); cross_entropy on bf16 logits 4.000 B per logit saved eager (the fp32 log-softmax), 2.001 compiled
(the 16-bit logits + per-row statistics). transformers' LlamaModel building its own mask, per layer: bf16
11,048 without padding, 12,072 with (the K/V copies 768 and 256 = 2·s more: each layer saves a 16-bit
copy of the padded batch's b × s × s mask, 2·b·s² bytes, not counted); under autocast over fp32 parameters
19,112 and 20,136, of which 5,504 are the 16-bit weight casts (counted apart), leaving 13,608 [eager +
autocast without the copies 13,600] and 14,632 [14,368 with them; the mask copy again the rest].
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proposalkit.estimate.activations import activation_terms_per_layer  # noqa: E402
from proposalkit.catalog.shapes import ModelSpec  # noqa: E402

H, FF, HEADS, KV, D, VOCAB = 256, 704, 8, 2, 32, 1024
S, B = 128, 2


def saved_bytes(run, exclude=()) -> int:
    """Bytes of the distinct storages saved for backward while `run()` executes, `exclude` storages apart."""
    skip = {t.untyped_storage().data_ptr() for t in exclude}
    seen: dict[int, int] = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    return sum(seen.values()), out


def llama_layer(mask: bool, compiled: bool) -> int:
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=H, intermediate_size=FF, num_attention_heads=HEADS, num_key_value_heads=KV,
                         head_dim=D, num_hidden_layers=1, vocab_size=VOCAB, attn_implementation="sdpa")
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    layer = LlamaDecoderLayer(config, layer_idx=0).to(torch.bfloat16)
    rope = LlamaRotaryEmbedding(config)
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    positions = torch.arange(S).unsqueeze(0).expand(B, S)
    cos, sin = rope(x, positions)
    attn_mask = None
    if mask:   # a padded batch: transformers passes a 4-D mask, and sdpa_attention_forward calls repeat_kv
        attn_mask = torch.full((S, S), float("-inf"), dtype=torch.bfloat16).triu(1)[None, None].expand(B, 1, S, S)
    fn = torch.compile(layer) if compiled else layer

    def run():
        out = fn(x, attention_mask=attn_mask, position_ids=positions, position_embeddings=(cos, sin))
        return out[0] if isinstance(out, tuple) else out

    if compiled:
        run()      # compile outside the measurement
    # The mask is one storage shared by every layer (a compiled graph may save an expanded copy: reported).
    exclude = [*layer.parameters(), cos, sin] + ([attn_mask] if mask else [])
    got, _ = saved_bytes(run, exclude=exclude)
    return got


def llama_layer_autocast() -> tuple[int, int]:
    """(saved bytes, the 16-bit weight casts among them) of transformers' Llama layer with fp32 parameters
    under torch.autocast to bf16 (Hugging Face Trainer AMP), an fp32 residual stream and a padded batch's
    fp32 4-D mask."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=H, intermediate_size=FF, num_attention_heads=HEADS, num_key_value_heads=KV,
                         head_dim=D, num_hidden_layers=1, vocab_size=VOCAB)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    layer = LlamaDecoderLayer(config, layer_idx=0)
    rope = LlamaRotaryEmbedding(config)
    x = torch.randn(B, S, H, requires_grad=True)
    positions = torch.arange(S).unsqueeze(0).expand(B, S)
    cos, sin = rope(x, positions)
    attn_mask = torch.full((S, S), float("-inf")).triu(1)[None, None].expand(B, 1, S, S)
    params = list(layer.parameters())

    def run():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return layer(x, attention_mask=attn_mask, position_ids=positions, position_embeddings=(cos, sin))

    got, _ = saved_bytes(run, exclude=[*params, cos, sin, attn_mask])
    return got, 2 * sum(p.numel() for p in params if p.dim() == 2)


def llama_model_per_layer(autocast: bool, padded: bool) -> float:
    """Saved bytes per token and layer of transformers' LlamaModel in training mode, as the difference between
    two layers and one (the embedding and final norm cancel), transformers building the mask itself from a
    2-D attention_mask (a quarter of the first sequence padded, or none); parameters apart (the 16-bit
    weight casts under autocast are not: they are per layer)."""
    from transformers import LlamaConfig, LlamaModel

    def saved(layers: int) -> int:
        config = LlamaConfig(hidden_size=H, intermediate_size=FF, num_attention_heads=HEADS, num_key_value_heads=KV,
                             head_dim=D, num_hidden_layers=layers, vocab_size=VOCAB, attn_implementation="sdpa")
        torch.manual_seed(0)
        model = LlamaModel(config)
        model = model.train() if autocast else model.to(torch.bfloat16).train()
        ids = torch.randint(0, VOCAB, (B, S))
        mask = torch.ones(B, S, dtype=torch.long)
        if padded:
            mask[0, : S // 4] = 0

        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                return model(input_ids=ids, attention_mask=mask).last_hidden_state

        got, _ = saved_bytes(run, exclude=list(model.parameters()))
        return got

    return (saved(2) - saved(1)) / (B * S)


def expanded_attention(compiled: bool) -> float:
    """Saved bytes per token of q, k, v projections, K and V expanded to every query head by unsqueeze +
    expand + flatten (as torchtune's MultiHeadAttention @ bd2a0fc7c does), causal SDPA and the output
    projection."""

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.q = torch.nn.Linear(H, HEADS * D, bias=False)
            self.k = torch.nn.Linear(H, KV * D, bias=False)
            self.v = torch.nn.Linear(H, KV * D, bias=False)
            self.o = torch.nn.Linear(HEADS * D, H, bias=False)

        def forward(self, x):
            q = self.q(x).view(B, S, HEADS, D).transpose(1, 2)
            k = self.k(x).view(B, S, KV, D).transpose(1, 2)
            v = self.v(x).view(B, S, KV, D).transpose(1, 2)
            shape = (B, KV, HEADS // KV, S, D)
            k = k.unsqueeze(2).expand(shape).flatten(1, 2)
            v = v.unsqueeze(2).expand(shape).flatten(1, 2)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(out.transpose(1, 2).reshape(B, S, HEADS * D))

    torch.manual_seed(0)
    module = Attention().to(torch.bfloat16)
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    fn = torch.compile(module) if compiled else module
    if compiled:
        fn(x)
    got, _ = saved_bytes(lambda: fn(x), exclude=list(module.parameters()))
    return got / (B * S)


def cross_entropy(compiled: bool) -> float:
    """Saved bytes per logit of cross_entropy(logits.float(), labels) on bf16 logits of one chunk."""
    rows = 512
    logits = torch.randn(rows, VOCAB * 8, dtype=torch.bfloat16, requires_grad=True)
    labels = torch.randint(0, VOCAB * 8, (rows,))

    def ce(x, y):
        return F.cross_entropy(x.float(), y, reduction="sum")

    fn = torch.compile(ce) if compiled else ce
    if compiled:
        fn(logits, labels)
    got, _ = saved_bytes(lambda: fn(logits, labels), exclude=[labels])
    return got / (rows * VOCAB * 8)


def main() -> None:
    import transformers
    print(f"torch {torch.__version__}, transformers {transformers.__version__}; h {H}, f {FF}, {HEADS} heads, "
          f"{KV} kv heads of {D}, {S} × {B} tokens, bf16")
    spec = ModelSpec(id="toy", name="toy", layers=1, hidden=H, heads=HEADS, kv_heads=KV, head_dim=D,
                     ffn_hidden=FF, vocab=VOCAB)
    for eager in (False, True):
        terms = activation_terms_per_layer(spec, S, B, flash_attention=True, kernels="eager" if eager else "compiled")
        print(f"proposalkit, {'eager' if eager else 'compiled'} terms: {float(sum(terms.values())) / (S * B):,.0f} "
              f"B per token ({', '.join(f'{k} {float(v) / (S * B):,.0f}' for k, v in terms.items())})")
    for mask in (False, True):
        for compiled in (False, True):
            got = llama_layer(mask, compiled)
            print(f"LlamaDecoderLayer, mask {'4-D (padded batch)' if mask else 'none (is_causal)'}, "
                  f"{'compiled' if compiled else 'eager'}: {got / (S * B):,.0f} B per token saved")
    terms = activation_terms_per_layer(spec, S, B, flash_attention=True, kernels="eager", autocast_fp32_params=True)
    got, casts = llama_layer_autocast()
    print(f"LlamaDecoderLayer, fp32 parameters under autocast, padded batch's fp32 mask: {(got - casts) / (S * B):,.0f} "
          f"B per token saved beside the 16-bit weight casts (proposalkit {float(sum(terms.values())) / (S * B):,.0f}; "
          f"the mask's bf16 cast, 2·s = {2 * S} B per token, is the rest)")
    casts = 2 * (2 * H * HEADS * D + 2 * H * KV * D + 3 * H * FF) / (S * B)
    for autocast in (False, True):
        for padded in (False, True):
            print(f"LlamaModel, {'fp32 parameters under autocast' if autocast else 'bf16'}, "
                  f"{'padded batch' if padded else 'no padding'}: {llama_model_per_layer(autocast, padded):,.0f} B "
                  f"per token and layer saved" + (f" ({casts:,.0f} of them the 16-bit weight casts)" if autocast else ""))
    for compiled in (False, True):
        print(f"attention with K, V expanded to {HEADS} heads (torchtune's pattern), "
              f"{'compiled' if compiled else 'eager'}: {expanded_attention(compiled):,.0f} B per token saved "
              f"(x, q, the expanded K and V, the output and the fp32 log-sum-exp: "
              f"{2 * H + 2 * HEADS * D * 4 + 4 * HEADS:,})")
    for compiled in (False, True):
        print(f"cross_entropy(bf16 logits .float()), {'compiled' if compiled else 'eager'}: "
              f"{cross_entropy(compiled):.3f} B per logit saved")


if __name__ == "__main__":
    main()
