// Self-consistency libFuzzer harness of the ChunkKV / EG-ChunkKV oracle, on chunk_select_fuzz's cases
// (fuzz/chunk_fuzz_case.h, the same corpus): the canonical selection passes the admissibility checker. The exact
// flavour's with exact ties only (Rounding::ExactOnly); the kvpress flavour's, kvpress's own float32 arithmetic, under
// the float32 tolerance model, or is inconclusive where that model does not reach (a float32 evaluation that may
// overflow, rule "float32-overflow"). The selection and the checker are the filtered ones
// (proofs/15_filtered_admissibility.md). A rejection prints the case and traps. The optimized selectors are
// chunk_select_fuzz's question.
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
  const HeadScores s = c->scores();
  Selection canonical;
  try {
    canonical = oracle::select(s, p, oracle::Arithmetic::Filtered);
  } catch (const std::invalid_argument&) {
    return 0;  // invalid for the flavour: chunk_select_fuzz checks that the optimized selector agrees
  }
  const bool kvpress = p.flavour == Flavour::Kvpress;
  const Verdict v = oracle::check_admissible(
      s, p, canonical,
      oracle::AdmissibilityOptions{kvpress ? oracle::Rounding::Float32Evaluation : oracle::Rounding::ExactOnly});
  const bool beyond_the_model = kvpress && v.kind == VerdictKind::Inconclusive && v.rule == "float32-overflow";
  if (!v.passed() && !beyond_the_model)
    report_and_trap("chunk oracle: canonical selection rejected by the admissibility checker",
                    describe(s, p) + "\ncanonical: " + positions(canonical) + "\nverdict: " + to_string(v.kind) + " " +
                        v.rule + ": " + v.message);
  return 0;
}
