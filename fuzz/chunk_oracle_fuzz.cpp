// Self-consistency libFuzzer harness of the ChunkKV / EG-ChunkKV oracle, on chunk_select_fuzz's cases
// (fuzz/chunk_fuzz_case.h, the same corpus): the canonical selection of the exact flavour passes the admissibility
// checker with exact ties only (Rounding::ExactOnly). The selection and the checker are the filtered ones
// (proofs/15_filtered_admissibility.md). A rejection prints the case and traps. The optimized selectors are
// chunk_select_fuzz's question. (The kvpress flavour is not checked here: its float32 chunk sums can overflow to
// inf, which the checker's float32 tolerance model does not cover; docs/hardening.md, "Fuzzing".)
#include <cstdint>
#include <stdexcept>

#include "fuzz/chunk_fuzz_case.h"
#include "fuzz/fuzz_support.h"
#include "oracle/chunk_selection.h"

using namespace kvaudit;
using kvaudit::fuzz::describe;
using kvaudit::fuzz::positions;
using kvaudit::fuzz::report_and_trap;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto c = fuzz::decode_chunk_case(data, size);
  if (!c) return 0;
  const SelectorParams& p = c->params;
  if (p.flavour != Flavour::Exact) return 0;
  const HeadScores s = c->scores();
  Selection canonical;
  try {
    canonical = oracle::select(s, p, oracle::Arithmetic::Filtered);
  } catch (const std::invalid_argument&) {
    return 0;  // invalid for the flavour: chunk_select_fuzz checks that the optimized selector agrees
  }
  Verdict v = oracle::check_admissible(s, p, canonical, oracle::AdmissibilityOptions{oracle::Rounding::ExactOnly});
  if (!v.passed())
    report_and_trap("chunk oracle: canonical selection rejected by the admissibility checker",
                    describe(s, p) + "\ncanonical: " + positions(canonical) + "\nverdict: " + to_string(v.kind) + " " +
                        v.rule + ": " + v.message);
  return 0;
}
