#!/usr/bin/env python3
"""Equivalence of the study's shared prefill with kvpress's own pipeline, press by press, token for token.

For each haystack, mode and condition: the answer ids the harness decodes from its one shared prefill
(needle_study.run_haystack_mode) against the ids ``pipeline(context, question=..., answer_prefix=..., press=...)``
decodes when called alone with a fresh press (both captured at the tokenizer's decode call inside kvpress's
generate_answer). A pipeline call that raises must raise where the harness recorded an error, with the same
message. Writes a JSON report; exit 0 only when every comparison is equal, 1 otherwise.

Usage:
  /opt/kvenv/bin/python tools/needle_study/equivalence.py --gguf <file> --model-id <id> --haystacks 3 --tokens 1500 \\
      --out data/<model>/needle_study/equivalence.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import needle_study as ns  # noqa: E402
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--model-id", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--haystacks", type=int, default=3)
    ap.add_argument("--first", type=int, default=0, help="index of the first haystack")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--max-new-tokens", type=int, default=12)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--conditions", default=None)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    names = a.conditions.split(",") if a.conditions else list(ns.conditions())
    t0 = time.time()
    pipe, info = ns.load(a.gguf, a.model_id)
    filler = ns.filler_paragraphs()
    rows = []

    def write(status):
        n_equal = sum(r["equal"] for r in rows)
        report = {"schema": "kvaudit-needle-equivalence/1", "model": info, "packages": ns.package_versions(),
                  "command": shlex.join(sys.argv), "threads": a.threads, "seed": a.seed, "tokens": a.tokens,
                  "haystacks_planned": list(range(a.first, a.first + a.haystacks)), "conditions": names,
                  "status": status, "haystacks_done": sorted({r["haystack"] for r in rows}),
                  "comparisons": len(rows), "equal": n_equal,
                  "both_error": sum(r["equal"] and r["shared_error"] is not None for r in rows),
                  "verdict": "equal" if rows and n_equal == len(rows) else "differs",
                  "wall_s": round(time.time() - t0, 1),
                  "written_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "rows": rows}
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out + ".tmp", "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        os.replace(a.out + ".tmp", a.out)
        return report

    for i in range(a.first, a.first + a.haystacks):
        spec = ns.haystack_spec(a.seed, i)
        prefix, question_text = spec["answer_prefix"], spec["question"]
        doc = ns.build_document(pipe.tokenizer, spec, filler, a.tokens)
        for mode in ns.MODES:
            shared, _ = ns.run_haystack_mode(pipe, spec, doc, mode, a.max_new_tokens, names, log=lambda s: None)
            context, question = ns.mode_inputs(spec, doc, mode)
            for rec in shared:
                press = ns.conditions()[rec["condition"]][1]()
                error = None
                with ns.IdCapture(pipe.tokenizer) as cap:
                    try:
                        answer = pipe(context, question=question, answer_prefix=prefix, press=press,
                                      max_new_tokens=a.max_new_tokens)["answer"]
                    except RuntimeError as e:
                        error, answer, cap.ids = f"{type(e).__name__}: {e}", None, None
                equal = (cap.ids == rec["answer_ids"] and answer == rec["answer"] and error == rec["error"])
                rows.append({"haystack": i, "mode": mode, "condition": rec["condition"], "equal": equal,
                             "shared_answer": rec["answer"], "pipeline_answer": answer,
                             "shared_ids": rec["answer_ids"], "pipeline_ids": cap.ids,
                             "shared_error": rec["error"], "pipeline_error": error,
                             "context_tokens": rec["context_tokens"]})
                print(f"[{i} {mode} {rec['condition']}] equal={equal} {answer!r}", flush=True)
            write("running")  # after every (haystack, mode): a cut run keeps what it compared
        del question_text
    report = write("complete")
    print(f"{report['equal']}/{report['comparisons']} equal ({report['both_error']} of them: both raised the same error)")
    sys.exit(0 if report["verdict"] == "equal" else 1)


if __name__ == "__main__":
    main()
