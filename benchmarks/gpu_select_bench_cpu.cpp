// The GPU selector benchmark driver built against the CPU (Thrust/OpenMP) build, so scripts/gpu-check.sh's
// benchmark path runs, small, on machines without a GPU.
#define KVAUDIT_BENCH_BACKEND cpu
#include "benchmarks/gpu_select_bench.cu"
