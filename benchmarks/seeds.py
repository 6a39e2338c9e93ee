"""The seed texts' table builders, transcribed faithfully.

Only two things differ from the texts: the NumPy function is also given in
its float32 form (``np.arange(..., dtype=np.float32)`` and a float32 table,
the form people use to feed a float32 model; the text's float64 original is
kept as well), and the PyTorch module of seed 002 is reduced to the table it
builds in ``__init__`` (no dropout, no ``unsqueeze(0)``, no buffer).
"""

from __future__ import annotations

import math

import numpy as np


def seed001_numpy(seq_len: int, d_model: int) -> np.ndarray:
    """Seed 001 as written (float64)."""
    position = np.arange(seq_len)[:, np.newaxis]
    div_term = np.exp(np.arange(0, d_model, 2) * -(np.log(10000.0) / d_model))
    pos_encoding = np.zeros((seq_len, d_model))
    pos_encoding[:, 0::2] = np.sin(position * div_term)
    pos_encoding[:, 1::2] = np.cos(position * div_term)
    return pos_encoding


def seed001_numpy_float32(seq_len: int, d_model: int) -> np.ndarray:
    """Seed 001 in float32: every array of the function in float32."""
    position = np.arange(seq_len, dtype=np.float32)[:, np.newaxis]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-(np.log(10000.0) / d_model)))
    pos_encoding = np.zeros((seq_len, d_model), dtype=np.float32)
    pos_encoding[:, 0::2] = np.sin(position * div_term)
    pos_encoding[:, 1::2] = np.cos(position * div_term)
    return pos_encoding


def seed000_torch_exp(seq_len: int, d_model: int):
    """Seed 000's ``positional_encoding`` (the exp / log form of the frequencies)."""
    import torch

    pe = torch.zeros(seq_len, d_model)
    position = torch.arange(0, seq_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def seed002_torch_pow(seq_len: int, d_model: int):
    """Seed 002's ``PositionalEncoding.__init__`` table (the pow form)."""
    import torch

    pe = torch.zeros(seq_len, d_model)
    position = torch.arange(0, seq_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.pow(10000.0, -torch.arange(0, d_model, 2, dtype=torch.float) / d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def hf_rotate_half(x):
    """Hugging Face's ``rotate_half`` (Llama): ``cat(-x2, x1)``."""
    import torch

    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def hf_apply_rotary_torch(x, cos, sin):
    """Hugging Face's ``q * cos + rotate_half(q) * sin`` written out."""
    return (x * cos) + (hf_rotate_half(x) * sin)


def hf_apply_rotary_numpy(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """The same formula in NumPy."""
    h = x.shape[-1] // 2
    rotated = np.concatenate((-x[..., h:], x[..., :h]), axis=-1)
    return (x * cos) + (rotated * sin)
