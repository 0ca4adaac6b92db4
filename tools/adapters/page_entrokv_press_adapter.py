#!/usr/bin/env python3
"""Serve `kvaudit conform --method page-entrokv` with PageEntroKVPress's own selection code.

Run as (needs kvpress and the kvaudit package, extra `kvaudit[kvpress]`):
  kvaudit conform --method page-entrokv --impl "/opt/kvenv/bin/python tools/adapters/page_entrokv_press_adapter.py"

Each request's attention rows go through `kvaudit.page_entrokv_press.select_pages`, the one function the press's
compress() calls on the window attention it computes, and the kept pages are mapped to tokens with the press's
`pages_to_positions` (sent as `kept_tokens`, so conform also checks the page ledger). The press's compress()
additionally computes the window attention from the model and gathers the cache; neither is exercised here
(equivalence with the pipeline: tools/needle_study/equivalence.py).
"""
import json
import re
import sys

import numpy as np

from kvaudit.page_entrokv_press import PageEntroKVPress, pages_to_positions, select_pages

RATIO = re.compile(r'"compression_ratio"\s*:\s*("?)([0-9.eE+-]+)\1')
KNOBS = ("sinks", *PageEntroKVPress.KNOBS)


def answer(req, rho_text):
    attention = np.asarray(req["attention"], dtype=np.float32)
    if attention.ndim != 2:
        raise ValueError(f"attention: expected q_heads x T rows, got {attention.ndim} dimensions")
    options = {k: req[k] for k in KNOBS if k in req}
    kept = select_pages(attention, req["group_size"], req["page_size"], rho_text, **options)
    tokens = pages_to_positions(kept, req["page_size"], attention.shape[1])
    return {"kept_pages": [[int(p) for p in k] for k in kept], "kept_tokens": [[int(t) for t in k] for k in tokens]}


def main():
    for line in sys.stdin:
        req = json.loads(line)
        try:
            out = {"id": req["id"], **answer(req, RATIO.search(line).group(2))}
        except ValueError as e:  # the selector refused the input: kvaudit reports it as a protocol error
            out = {"id": req["id"], "error": f"ValueError: {e}"}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
