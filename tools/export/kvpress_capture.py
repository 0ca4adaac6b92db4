"""Records what kvpress sees and does, without re-implementing any press.

* `Recorder` is a kvpress BasePress whose forward hook (installed by kvpress's own `press(model)` context
  manager) stores, per layer, the scorers' `score()` outputs, the attention of the last W queries and Q/K/V,
  and leaves the cache untouched.
* `capture_press_run` runs a real kvpress press through the same context manager and the same prefill call
  the kvpress pipeline makes, spying on the press's `compress` (the `gather` index it applies to the cache)
  and on its inner scorer's `score` (the exact tensor the press ranked).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from transformers import DynamicCache
from transformers.models.llama.modeling_llama import repeat_kv, rotate_half

from kvpress.presses.base_press import BasePress
from kvpress.utils import extract_keys_and_values, get_prerope_query_states



def attention_output_rtol(tokens: int) -> float:
    """Tolerance for checking our recomputed attention against the model's own attention output: both are
    float32 over the same inputs, differing only in summation order (sdpa vs matmul+softmax); the relative
    error of a length-T float32 dot product is bounded by ~T * 2^-24 (3e-4 kept as the floor: T <= 4096)."""
    return max(3e-4, 1.25 * tokens * 2.0 ** -24)


@dataclass
class Recorder(BasePress):
    scorers: dict = field(default_factory=dict)  # name -> ScorerPress instance
    window: int = 64
    qkv_layers: tuple = ()
    records: dict = field(default_factory=dict)  # layer -> dict of tensors
    max_output_error: float = 0.0

    def forward_hook(self, module, input, kwargs, output):
        hidden_states = kwargs["hidden_states"]
        q_len = hidden_states.shape[1]
        cache = kwargs["past_key_values"]
        if not (kwargs["cache_position"][-1] + 1 == q_len):
            return output  # decoding step: nothing to record
        keys, values = extract_keys_and_values(cache, module.layer_idx)
        rec = {}
        with torch.no_grad():
            for name, scorer in self.scorers.items():
                s = scorer.score(module, hidden_states, keys, values, output[1], kwargs)
                rec["scores." + name] = s[0].detach().float().clone()  # (kv_heads, T)
            attn, query = self._window_attention(module, hidden_states, keys, kwargs)
            rec["window_attention"] = attn  # (q_heads, W, T) float32
            self._check_against_model_output(module, attn, values, output[0])
            rec["keys"] = keys[0].detach().clone()
            rec["values"] = values[0].detach().clone()
            if module.layer_idx in self.qkv_layers:
                rec["query"] = query[0].detach().clone()  # (q_heads, W, d), post-RoPE
        self.records[module.layer_idx] = rec
        return output

    def _window_attention(self, module, hidden_states, keys, kwargs):
        """Softmax attention of the last W queries over all T keys, causal, as the model computes it."""
        w = self.window
        t = keys.shape[2]
        groups = module.config.num_attention_heads // keys.shape[1]
        query = get_prerope_query_states(module, hidden_states[:, -w:])
        cos, sin = kwargs["position_embeddings"]
        cos, sin = cos[:, -w:], sin[:, -w:]
        query = (query * cos.unsqueeze(1)) + (rotate_half(query) * sin.unsqueeze(1))
        scale = getattr(module, "scaling", 1.0 / math.sqrt(module.head_dim))
        logits = torch.matmul(query, repeat_kv(keys, groups).transpose(2, 3)) * scale
        mask = torch.triu(torch.full((w, t), float("-inf")), diagonal=t - w + 1)
        attn = torch.softmax(logits.float() + mask, dim=-1)
        return attn[0], query

    def _check_against_model_output(self, module, attn, values, model_output):
        """Proves the recorded attention is the model's: o_proj(attn @ V) must equal the layer's output."""
        groups = attn.shape[0] // values.shape[1]
        v = repeat_kv(values, groups)[0]  # (q_heads, T, d)
        o = torch.matmul(attn, v.float())  # (q_heads, W, d)
        o = o.transpose(0, 1).reshape(1, attn.shape[1], -1).to(model_output.dtype)
        mine = module.o_proj(o)[0]
        theirs = model_output[0, -attn.shape[1]:]
        err = ((mine - theirs).abs().max() / theirs.abs().max()).item()
        self.max_output_error = max(self.max_output_error, err)
        assert err < attention_output_rtol(values.shape[2]), f"layer {module.layer_idx}: recomputed attention output off by {err}"


class GatherSpy(TorchFunctionMode):
    """Records the index argument of every Tensor.gather / torch.gather call made while active."""

    def __init__(self):
        super().__init__()
        self.indices = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.Tensor.gather, torch.gather):
            index = args[2] if len(args) > 2 else kwargs["index"]
            self.indices.append(index.detach().clone())
        return func(*args, **kwargs)


def run_recorder(model, input_ids, recorder: Recorder):
    """One prefill through kvpress's hook machinery; returns the last hidden state (for perplexity)."""
    cache = DynamicCache()
    with torch.no_grad(), recorder(model):
        out = model.model(input_ids=input_ids, past_key_values=cache)
    return out.last_hidden_state


def _spy(press, inner_scorer, kept, seen_scores):
    """Instance-level wrappers on the press's compress and its inner scorer's score (class code untouched)."""
    original_compress = press.compress
    original_score = inner_scorer.score

    def spy_score(module, *args, **kwargs):
        s = original_score(module, *args, **kwargs)
        seen_scores[module.layer_idx] = s.detach().clone()
        return s

    def spy_compress(module, hidden_states, keys, values, attentions, kwargs):
        with GatherSpy() as spy:
            k2, v2 = original_compress(module, hidden_states, keys, values, attentions, kwargs)
        # The press gathers keys then values with the same index, expanded over heads and head_dim.
        assert len(spy.indices) == 2 and torch.equal(spy.indices[0], spy.indices[1]), "unexpected gathers"
        index = spy.indices[0][0]  # (kv_heads, n, head_dim)
        assert bool((index == index[:1, :, :1]).all()), "selection differs across heads"
        kept[module.layer_idx] = index[0, :, 0].clone()
        return k2, v2

    press.compress = spy_compress
    inner_scorer.score = spy_score


def _unspy(press, inner_scorer):
    del press.compress
    del inner_scorer.score


def _check_cache(layer_cache_keys, positions, full_keys_layer, what):
    """What kvpress left in the cache must be exactly the original keys at the captured positions."""
    assert torch.equal(layer_cache_keys[0], full_keys_layer[:, positions]), f"{what}: cache != captured positions"


def capture_press_run(model, input_ids, press, inner_scorer, full_keys):
    """Runs one press exactly as the kvpress pipeline prefills (press(model) context, model.model(...) call)
    and returns per layer (kept positions in the order the press gathered them, the scores its inner
    scorer returned)."""
    kept, seen = {}, {}
    _spy(press, inner_scorer, kept, seen)
    cache = DynamicCache()
    try:
        with torch.no_grad(), press(model):
            model.model(input_ids=input_ids, past_key_values=cache)  # the pipeline's prefill call
    finally:
        _unspy(press, inner_scorer)
    for layer, positions in kept.items():
        _check_cache(cache.layers[layer].keys, positions, full_keys[layer], f"layer {layer}")
    return kept, seen


def capture_press_runs(model, input_ids, presses, full_keys):
    """Runs many presses in one prefill. Every press installs its own kvpress forward hooks (its own
    press(model) context); before each press's hook runs, the layer's cache is reset to the full keys and
    values the attention layer produced, so each hook receives exactly the arguments it receives when its
    press runs alone (prefill activations never read the compressed cache). `presses`: name -> (press,
    inner scorer). Returns name -> (kept, seen_scores). Equivalence with single runs is checked by the
    exporter (capture_press_run on some configurations)."""
    import contextlib

    results = {name: ({}, {}) for name in presses}
    pristine = {}
    cache = DynamicCache()

    def isolate(name, press):
        original_hook = press.forward_hook

        def hook(module, input, kwargs, output):
            layer = cache.layers[module.layer_idx]
            keys, values = pristine.setdefault(module.layer_idx, (layer.keys, layer.values))
            layer.keys, layer.values = keys, values
            out = original_hook(module, input, kwargs, output)
            positions = results[name][0][module.layer_idx]
            _check_cache(layer.keys, positions, full_keys[module.layer_idx], f"{name} layer {module.layer_idx}")
            layer.keys, layer.values = keys, values
            return out

        press.forward_hook = hook

    for name, (press, inner) in presses.items():
        _spy(press, inner, *results[name])
        isolate(name, press)
    try:
        with torch.no_grad(), contextlib.ExitStack() as stack:
            for press, _ in presses.values():
                stack.enter_context(press(model))
            model.model(input_ids=input_ids, past_key_values=cache)
    finally:
        for press, inner in presses.values():
            _unspy(press, inner)
            del press.forward_hook
    return results
