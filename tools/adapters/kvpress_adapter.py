#!/usr/bin/env python3
"""Serve the kvaudit conform protocol with the real kvpress presses (ChunkKVPress, EntropyGatedChunkKVPress).

Run as:  kvaudit conform --method eg-chunkkv --impl "/opt/kvenv/bin/python tools/adapters/kvpress_adapter.py"
Each request's scores are returned by a ScorerPress subclass, so the press under test runs its own compress()
unchanged: keys carry their position in channel 0 (keys[0, h, t, 0] = t), and the positions kept are read back
from the compressed keys. Nothing of the selection logic is re-implemented here.
"""
import json
import re
import sys
from dataclasses import dataclass, field

import torch
from kvpress import ChunkKVPress, EntropyGatedChunkKVPress, ScorerPress

RATIO = re.compile(r'"compression_ratio"\s*:\s*([0-9.eE+-]+)')
HEAD_DIM = 4
SORT_FALLBACK = "--sort-fallback" in sys.argv[1:]


@dataclass
class FixedScorer(ScorerPress):
    """A ScorerPress whose score() returns the request's (1, kv_heads, T) float32 scores."""

    scores: torch.Tensor = field(default=None)

    def score(self, module, hidden_states, keys, values, attentions, kwargs):
        return self.scores


class DummyModule:
    """What compress() reads from the attention module: only head_dim."""

    head_dim = HEAD_DIM


def kept_positions(keys_out):
    """Positions per head, read from channel 0 of the compressed keys (exact: positions < 2**24)."""
    return [[int(v) for v in keys_out[0, h, :, 0].tolist()] for h in range(keys_out.shape[1])]


def answer(req, rho_text):
    scores = torch.tensor(req["scores"], dtype=torch.float32).unsqueeze(0)  # (1, H, T)
    _, heads, T = scores.shape
    keys = torch.zeros(1, heads, T, HEAD_DIM)
    keys[0, :, :, 0] = torch.arange(T, dtype=torch.float32)
    values = keys.clone()
    # Python parses the ratio from its text exactly as `compression_ratio=0.9` would in user code.
    scorer = FixedScorer(compression_ratio=float(rho_text), scores=scores)
    if req["method"] == "eg-chunkkv":
        if req["entropy_threshold"] is not None:
            raise ValueError("kvpress EntropyGatedChunkKVPress has no fixed entropy threshold (tau is the median)")
        press = EntropyGatedChunkKVPress(press=scorer, chunk_length=req["chunk_length"],
                                         low_entropy_chunk_length=req["rescue_size"])
    else:
        press = ChunkKVPress(press=scorer, chunk_length=req["chunk_length"])
    with torch.no_grad():
        keys_out, _ = press.compress(DummyModule(), None, keys, values, None, {})
    per_head = kept_positions(keys_out)
    # Positions are reported in the order the press stored them. ScorerPress's fallback (ChunkKV with no
    # complete chunk) gathers each head's top-k in top-k order, not positional order: kvaudit reports that as
    # an `order` violation. SORT_FALLBACK (--sort-fallback) sorts them so the fallback's other rules get checked.
    if SORT_FALLBACK:
        per_head = [sorted(p) for p in per_head]
    if all(p == per_head[0] for p in per_head):
        return per_head[0]
    return per_head


def main():
    torch.set_num_threads(1)
    for line in sys.stdin:
        req = json.loads(line)
        try:
            kept = answer(req, RATIO.search(line).group(1))
            out = {"id": req["id"], "kept": kept}
        except (AssertionError, ValueError) as e:  # kvpress refused the parameters: say so, kvaudit reports it
            out = {"id": req["id"], "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
