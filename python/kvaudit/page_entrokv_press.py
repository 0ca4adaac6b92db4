"""PageEntroKVPress: Page-EntroKV (docs/page-entrokv.md, docs/specification.md section 5) as a kvpress press (extra ``kvaudit[kvpress]``).

Per layer, at prefill:
  1. the attention of the last ``window_size`` queries over all ``T`` positions, per query head, computed as
     kvpress's SnapKVPress computes it (post-RoPE window queries against the cached keys, causal inside the
     window, softmax in float32), averaged over the window queries: one distribution ``p_h`` per query head;
  2. pages kept per KV group by the toolkit's own selector, ``kvaudit.page_select`` (the C++ that
     ``kvaudit page-select`` runs, whose output ``kvaudit conform --method page-entrokv`` judges);
  3. every head of a group keeps exactly the tokens of its group's kept pages (KV head g is group g, in
     Hugging Face ``repeat_kv`` order).

The cache is physically gathered. Groups and layers can retain different token counts (through the partial last
page, which skip-misfits may fit in one group and not another), but kvpress's pipeline decodes with one cache
length for every layer and head (ChunkKVPress fails exactly there when layers keep different counts). So every
layer's cache holds B = max(1, floor((1 - rho) T)) slots, the budget (retained <= B always): each group's kept
tokens, then its own lowest not-kept positions, those padding slots masked at decoding through kvpress's
head-wise masking (``module.masked_key_indices``, attention_patch.py: a fake key whose attention
underflows to zero, the mechanism AdaKVPress uses). The padded slots carry no attention weight, so the cache
the model reads is exactly the selection. ``last_selection`` keeps what each layer kept, for inspection.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from kvpress.presses.base_press import BasePress
from kvpress.utils import get_prerope_query_states
from transformers.models.llama.modeling_llama import repeat_kv, rotate_half

from . import page_select, ratio_text

__all__ = ["PageEntroKVPress", "window_attention", "select_pages", "pages_to_positions"]


def window_attention(module: nn.Module, hidden_states: torch.Tensor, keys: torch.Tensor, window_size: int,
                     position_embeddings) -> torch.Tensor:
    """(q_heads, T) float32: softmax attention of the last W queries over all T keys (causal within the
    window), averaged over the W queries. Each row sums to 1. Batch element 0."""
    t = keys.shape[2]
    w = min(window_size, t)
    groups = module.config.num_attention_heads // keys.shape[1]
    query = get_prerope_query_states(module, hidden_states[:, -w:])
    cos, sin = position_embeddings
    cos, sin = cos[:, -w:], sin[:, -w:]
    query = (query * cos.unsqueeze(1)) + (rotate_half(query) * sin.unsqueeze(1))
    logits = torch.matmul(query, repeat_kv(keys, groups).transpose(2, 3)) / math.sqrt(module.head_dim)
    mask = torch.triu(torch.full((w, t), float("-inf"), device=keys.device), diagonal=t - w + 1)
    attn = torch.softmax(logits.float() + mask, dim=-1)
    return attn[0].mean(dim=1)


def select_pages(attention, group_size: int, page_size: int, compression_ratio, *, sinks: int = 4, **knobs) -> list:
    """Kept page indices per KV group for one layer's (q_heads, T) attention: kvaudit's C++ selector. ``knobs`` are
    ``kvaudit.page_select``'s (``preset``, ``pooling``, ``temperature``, ...; None is the preset's choice). This is
    the one selection function the press and its conform adapter (tools/adapters/page_entrokv_press_adapter.py)
    both call."""
    a = attention.detach().cpu().numpy() if isinstance(attention, torch.Tensor) else np.asarray(attention)
    return [np.asarray(k, dtype=np.int64) for k in
            page_select(a, group_size, page_size, ratio_text(compression_ratio), sinks=sinks, **knobs)]


def pages_to_positions(kept_pages, page_size: int, tokens: int) -> list:
    """Increasing token positions of each group's kept pages (the last page may be partial)."""
    out = []
    for pages in kept_pages:
        pos = [np.arange(p * page_size, min((p + 1) * page_size, tokens)) for p in sorted(int(x) for x in pages)]
        out.append(np.concatenate(pos) if pos else np.zeros(0, dtype=np.int64))
    return out


@dataclass
class PageEntroKVPress(BasePress):
    """Page-EntroKV under GQA. ``compression_ratio``: fraction removed (budget ``max(1, floor((1 - rho) T))``,
    rho read exactly from its shortest decimal text). ``preset`` ("kvaudit", "released", "paper", "entro-prefill")
    sets every choice at once, a knob given overrides it, None takes the preset's choice: as ``kvaudit.page_select``
    (docs/page-entrokv.md section 8). Without a preset the choices are kvaudit's (pooling "entropy", ...)."""

    compression_ratio: float = 0.0
    page_size: int = 16
    sinks: int = 4
    window_size: int = 64
    preset: str | None = None
    pooling: str | None = None
    temperature: float | None = None
    entropy_on: str | None = None
    source: str | None = None
    page_score: str | None = None
    sink_pages: str | None = None
    budget_unit: str | None = None
    page_count_rule: str | None = None
    greedy: str | None = None
    last_selection: dict = field(default_factory=dict, repr=False)  # layer -> list of kept positions per group

    KNOBS = ("preset", "pooling", "temperature", "entropy_on", "source", "page_score", "sink_pages", "budget_unit",
             "page_count_rule", "greedy")

    def __post_init__(self):
        if not 0 <= self.compression_ratio < 1:
            raise ValueError(f"compression_ratio: expected 0 <= rho < 1, got {self.compression_ratio!r}")
        if self.page_size < 1 or self.window_size < 1 or self.sinks < 0:
            raise ValueError(f"page_size/window_size/sinks: got {self.page_size}/{self.window_size}/{self.sinks}")
        # The knobs are validated once, by the one option parser, on a one-token row (ValueError naming the knob).
        select_pages(np.ones((1, 1), dtype=np.float32), 1, self.page_size, 0.5, sinks=self.sinks, **self.knobs())

    def knobs(self) -> dict:
        return {k: getattr(self, k) for k in self.KNOBS}

    def compress(self, module, hidden_states, keys, values, attentions, kwargs):
        if self.compression_ratio == 0:
            return keys, values
        assert keys.shape[0] == 1, "PageEntroKVPress: batch size 1 only (kvpress's pipeline prefills one context)"
        t = keys.shape[2]
        kv_heads = keys.shape[1]
        group_size = module.config.num_attention_heads // kv_heads
        attn = window_attention(module, hidden_states, keys, self.window_size, kwargs["position_embeddings"])
        kept_pages = select_pages(attn, group_size, self.page_size, self.compression_ratio, sinks=self.sinks,
                                  **self.knobs())
        positions = pages_to_positions(kept_pages, self.page_size, t)
        self.last_selection[module.layer_idx] = positions
        # Every layer's cache gets the budget's length B (see module docstring): the pipeline decodes with one
        # cache length for all layers, and retained <= B always; slots past a group's retained tokens are masked.
        n = max(1, math.floor((1 - Fraction(ratio_text(self.compression_ratio))) * t))
        n = max(n, max(len(p) for p in positions))
        index = torch.empty((kv_heads, n), dtype=torch.long)
        masked_heads, masked_slots = [], []
        for g, pos in enumerate(positions):
            pad = n - len(pos)
            if pad:  # the group's own lowest not-kept positions, masked at decoding (see module docstring)
                free = np.setdiff1d(np.arange(t), pos)[:pad]
                masked_heads += [g] * pad
                masked_slots += list(range(len(pos), n))
                pos = np.concatenate([pos, free])
            index[g] = torch.from_numpy(np.ascontiguousarray(pos, dtype=np.int64))
        index = index.to(keys.device).unsqueeze(0).unsqueeze(-1).expand(1, kv_heads, n, module.head_dim)
        if masked_heads:
            module.masked_key_indices = (torch.zeros(len(masked_heads), dtype=torch.long),
                                         torch.tensor(masked_heads), torch.tensor(masked_slots))
        return keys.gather(2, index).contiguous(), values.gather(2, index).contiguous()
