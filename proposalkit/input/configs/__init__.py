"""Hugging Face config.json → ModelSpec, one reader per architecture family (families.py, vision.py)."""

from .read import model_from_config

__all__ = ["model_from_config"]
