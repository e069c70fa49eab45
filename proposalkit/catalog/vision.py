"""Vision towers of vision-language models: the ViT encoder and the projector into the language
model, parameters only. They are counted in the weights (ModelSpec.vision_params, which
input/configs/read.py fills from a config.json's vision_config), not in the language model's FLOPs.
"""

from __future__ import annotations


def vision_encoder_params(hidden: int, ffn: int, layers: int, patch: int, image: int, *, channels: int = 3,
                          class_token: bool, patch_bias: bool, pre_norm: bool, pooling_head: bool = False) -> int:
    """A ViT encoder (CLIP, SigLIP vision tower), weights and biases.

    patch embedding c·p²·h (+ h bias, SigLIP) + position rows (image/p)² (+ 1
    for CLIP's class token) × h + class token h + L·(q, k, v, o with biases
    4·(h² + h) + fc1, fc2 with biases 2·h·f + f + h + two LayerNorms 4·h) +
    post LayerNorm 2·h (+ CLIP's pre LayerNorm 2·h) (+ SigLIP's attention
    pooling head: probe h, in/out projections 4·(h² + h), LayerNorm 2·h, MLP).
    """
    h, f = hidden, ffn
    positions = (image // patch) ** 2 + (1 if class_token else 0)
    count = channels * patch * patch * h + (h if patch_bias else 0) + positions * h + (h if class_token else 0)
    mlp = 2 * h * f + f + h
    count += layers * (4 * (h * h + h) + mlp + 4 * h) + 2 * h + (2 * h if pre_norm else 0)
    if pooling_head:
        count += h + 4 * (h * h + h) + 2 * h + mlp
    return count


def llava_projector_params(vision_hidden: int, text_hidden: int, bias: bool = True) -> int:
    """LLaVA's multi_modal_projector: linear_1 (vision → text width) and linear_2 (text → text), with biases."""
    return vision_hidden * text_hidden + text_hidden * text_hidden + (2 * text_hidden if bias else 0)


def gemma3_projector_params(vision_hidden: int, text_hidden: int) -> int:
    """Gemma 3's multi_modal_projector: mm_input_projection_weight (vision × text width) and
    mm_soft_emb_norm, an RMSNorm over the vision width."""
    return vision_hidden * text_hidden + vision_hidden
