#!/usr/bin/env bash
# One-shot, non-interactive GPU check: build the CUDA selectors, run the `gpu` test label, benchmark batched
# EG-ChunkKV / ChunkKV / Page-EntroKV selection (T = 32k and 128k, 32 layers x 8 KV heads) against a
# read-once pass on the same device, and, where torch + kvpress + CUDA are importable, time kvpress's own
# presses on the same shapes for a side-by-side ratio. Results go to $OUT (default ./gpu-check-out).
# Without a GPU it builds and runs the CPU build of the same algorithm and says the device parts were skipped.
# Usage: scripts/gpu-check.sh [build-dir]      env: OUT, KVAUDIT_PYTHON (default /opt/kvenv/bin/python or python3),
#   KVAUDIT_GPU_PREBUILT=DIR: run the test and benchmark binaries in DIR (built by `cmake --build build --target
#   gpu_device_test gpu_device_dumps_test gpu_select_bench` on a machine with the Debian -dev packages) instead of
#   building here: a device image without GoogleTest, RapidCheck, Boost or nlohmann-json cannot configure the tree.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build-gpucheck}"
out="${OUT:-$PWD/gpu-check-out}"
mkdir -p "$out"
jobs="$(nproc)"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt" >&2; }
: >"$out/summary.txt"

have_gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  have_gpu=1
  nvidia-smi -L | tee -a "$out/summary.txt" >&2
  nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv | tee "$out/nvidia-smi.csv" >&2 || true
else
  log "no GPU visible (nvidia-smi absent or lists none): device tests and the CUDA benchmark are SKIPPED"
fi

# ---- Build (only the targets this check needs) ----------------------------------------------------------
t0=$(date +%s)
{ command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -2; nvidia-smi --query-gpu=driver_version,compute_cap --format=csv 2>/dev/null; } \
  >"$out/toolchain.txt" 2>&1 || true
if [ -n "${KVAUDIT_GPU_PREBUILT:-}" ]; then
  bin="$KVAUDIT_GPU_PREBUILT"
  log "prebuilt binaries from $bin (not built here)"
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 >"$out/configure.log" 2>&1
  targets=(gpu_cpu_build_test gpu_select_bench_cpu)
  if grep -q "^CMAKE_CUDA_COMPILER:" "$build/CMakeCache.txt" 2>/dev/null && [ -n "$(grep '^CMAKE_CUDA_COMPILER:' "$build/CMakeCache.txt" | cut -d= -f2)" ]; then
    targets+=(gpu_device_test gpu_device_dumps_test gpu_select_bench)
  else
    log "nvcc not configured: CUDA targets not built"
  fi
  cmake --build "$build" -j "$jobs" --target "${targets[@]}" >"$out/build.log" 2>&1 || { log "build FAILED (see build.log)"; tail -30 "$out/build.log" >&2; exit 1; }
  log "built ${targets[*]} in $(( $(date +%s) - t0 )) s"
  bin="$build/core/gpu"
fi

status=0
# ---- CPU build of the GPU algorithm against the oracles (CI runs it too; skipped with prebuilt binaries) --
if [ -x "$bin/gpu_cpu_build_test" ]; then
  if timeout 300 "$bin/gpu_cpu_build_test" >"$out/gpu_cpu_build_test.log" 2>&1; then
    log "CPU build vs oracles: $(grep -c '^\[       OK \]' "$out/gpu_cpu_build_test.log") tests OK"
  else
    log "CPU build vs oracles: FAILED (gpu_cpu_build_test.log)"; status=1
  fi
fi

# ---- Device tests: generated cases, then every real dump under data/ -------------------------------------
if [ "$have_gpu" = 1 ]; then
  for t in gpu_device_test gpu_device_dumps_test; do
    [ -x "$bin/$t" ] || { log "$t not built: FAILED"; status=1; continue; }
    rc=0; timeout 240 "$bin/$t" >"$out/$t.log" 2>&1 || rc=$?
    # 77: tests skipped, none failed (tests/support/gtest_skip_main.cpp).
    if [ "$rc" = 77 ] || { [ "$rc" = 0 ] && grep -q "SKIPPED" "$out/$t.log"; }; then
      log "$t SKIPPED although nvidia-smi lists a GPU: treated as a failure"; status=1
    elif [ "$rc" = 0 ]; then
      log "$t: $(grep -c '^\[       OK \]' "$out/$t.log") OK; $(grep -h '^\[ gpu-device \]' "$out/$t.log" | tr '\n' ' ')"
    else
      log "$t FAILED, rc $rc ($t.log)"; status=1
    fi
  done
fi

# ---- Benchmarks -----------------------------------------------------------------------------------------
bench=""
[ "$have_gpu" = 1 ] && [ -x "$bin/gpu_select_bench" ] && bench="$bin/gpu_select_bench"
if [ -n "$bench" ]; then
  if timeout 240 "$bench" --tokens 32768,131072 --layers 32 --kv-heads 8 --group 4 --repeats 11 >"$out/gpu_bench.json" 2>"$out/gpu_bench.err"; then
    log "CUDA benchmark written to gpu_bench.json"
  else
    log "CUDA benchmark FAILED (gpu_bench.err)"; status=1
  fi
else
  # The CPU build of the benchmark, small, so the benchmark path itself is exercised everywhere.
  if timeout 120 "$bin/gpu_select_bench_cpu" --tokens 4096 --layers 4 --kv-heads 8 --group 4 --repeats 2 \
      >"$out/cpu_bench.json" 2>"$out/cpu_bench.err"; then
    log "CPU-build benchmark (T=4096, 4 layers; not a GPU figure) written to cpu_bench.json"
  else
    log "CPU-build benchmark FAILED (cpu_bench.err)"; status=1
  fi
fi

# ---- kvpress on the same shapes (side by side) ------------------------------------------------------------
py="${KVAUDIT_PYTHON:-}"
[ -z "$py" ] && { [ -x /opt/kvenv/bin/python ] && py=/opt/kvenv/bin/python || py=python3; }
# Why the side-by-side is skipped: the import's last error line (warnings on a successful import do not count).
why=""
import_log="$("$py" -c "import torch, kvpress; assert torch.cuda.is_available(), 'no CUDA in torch'" 2>&1)" ||
  { why="$(printf '%s\n' "$import_log" | tail -1)"; why="${why:-the import failed}"; }
if [ "$have_gpu" = 1 ] && [ -z "$why" ]; then
  timeout 200 "$py" - "$out" <<'PY' >"$out/kvpress_bench.log" 2>&1 || { echo "gpu-check: kvpress benchmark FAILED (kvpress_bench.log)" >&2; status=1; }
import json, sys, time, types
import torch
from kvpress import ChunkKVPress, EntropyGatedChunkKVPress
from kvpress.presses.scorer_press import ScorerPress

out = sys.argv[1]

class FixedScores(ScorerPress):
    """A ScorerPress whose score() returns precomputed scores: times the presses' selection alone."""
    def score(self, module, hidden_states, keys, values, attentions, kwargs):
        return self.fixed

layers, kv_heads, head_dim = 32, 8, 128
module = types.SimpleNamespace(head_dim=head_dim)
res = {"layers": layers, "kv_heads": kv_heads, "runs": []}
for T in (32768, 131072):
    g = torch.Generator(device="cuda").manual_seed(7)
    u = torch.rand((1, kv_heads, T), device="cuda", generator=g)
    scores = torch.where(u < 0.01, 50 * u, 0.001 * u).to(torch.float32)
    keys = torch.zeros((1, kv_heads, T, head_dim), device="cuda", dtype=torch.bfloat16)
    row = {"tokens": T}
    for name, cls, chunk in (("eg_chunkkv", EntropyGatedChunkKVPress, 10), ("chunkkv", ChunkKVPress, 20)):
        inner = FixedScores(compression_ratio=0.9)
        inner.fixed = scores
        press = cls(press=inner, chunk_length=chunk)
        press.compress(module, None, keys, keys, None, {})  # warm-up
        torch.cuda.synchronize()
        reps = 3 if T <= 32768 else 1
        t0 = time.perf_counter()
        for _ in range(reps):
            press.compress(module, None, keys, keys, None, {})
        torch.cuda.synchronize()
        row[name] = {"seconds_per_layer": (time.perf_counter() - t0) / reps}
    res["runs"].append(row)
json.dump(res, open(f"{out}/kvpress_bench.json", "w"), indent=2)
try:
    ours = json.load(open(f"{out}/gpu_bench.json"))
    for mine, theirs in zip(ours["runs"], res["runs"]):
        for m in ("eg_chunkkv", "chunkkv"):
            print(f"T={theirs['tokens']} {m}: kvpress {theirs[m]['seconds_per_layer']*1e3:.3f} ms/layer, "
                  f"batched {mine[m]['seconds_per_layer']*1e3:.4f} ms/layer, "
                  f"ratio {theirs[m]['seconds_per_layer'] / mine[m]['seconds_per_layer']:.1f}x")
except (OSError, KeyError, ValueError) as e:
    print("no CUDA benchmark to compare with:", e)
PY
  cat "$out/kvpress_bench.log" | tee -a "$out/summary.txt" >&2
else
  log "kvpress side-by-side SKIPPED (needs a GPU and importable torch + kvpress with CUDA in $py: ${why:-no GPU})"
fi

log "done in $(( $(date +%s) - t0 )) s, status $status"
exit "$status"
