// Differential libFuzzer harness: optimized ChunkKV / EG-ChunkKV (core/select) against the oracle
// (oracle/chunk_selection.h), on the cases of fuzz/chunk_fuzz_case.h. The two must agree on whether the input is
// valid; when both select, the optimized output must equal the canonical one where its arithmetic is the oracle's
// (the kvpress flavour; the exact flavour on small-integer and dyadic scores), and elsewhere equal it or be
// admissible (the checker accepts it under float32-evaluation ties). Anything else prints the case and traps.
// The canonical selection is the filtered one (double enclosures of the 50-digit statistics, 50 digits only for the
// comparisons they cannot decide), the naive one by proofs/15_filtered_admissibility.md. Whether the oracle agrees
// with its own checker is chunk_oracle_fuzz's question.
// The optimized selector runs as select_layers runs it, with one workspace and one output kept across inputs (their
// buffers sized by earlier, larger inputs must not leak into this one); a failing input is re-run with fresh ones,
// and the report says whether the inputs before it mattered.
#include <cstdint>
#include <string>

#include "core/select/chunk_select.h"
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

  static select::Workspace workspace;
  static Selection fast;
  Selection canonical;
  std::string fast_error, oracle_error;
  try {
    select::validate_params(p);
    select::select_layer(s, p, workspace, fast);
  } catch (const InputError& e) {
    fast_error = e.what();
  }
  try {
    canonical = oracle::select(s, p, oracle::Arithmetic::Filtered);
  } catch (const std::invalid_argument& e) {
    oracle_error = e.what();
  }
  if (fast_error.empty() != oracle_error.empty()) {
    report_and_trap("chunk select: validity disagreement",
                    describe(s, p) + "\noptimized: " + (fast_error.empty() ? "accepted" : fast_error) +
                        "\noracle: " + (oracle_error.empty() ? "accepted" : oracle_error));
  }
  if (!fast_error.empty() || fast.kept == canonical.kept) return 0;
  auto optimized = [&] {
    return "\noptimized: " + positions(fast) + "\nwith a fresh workspace: " + positions(select::select_layer(s, p));
  };

  // The optimized selector returns the canonical selection, tie order included, wherever its arithmetic is the
  // oracle's (the contract tests/property/core_select_property_test.cpp asserts): float32 as kvpress sums it, and
  // double on small integers and multiples of 1/8, whose sums and means double holds exactly. Elsewhere its double
  // statistics may order near-ties differently from 50 digits, and admissibility is what it owes.
  if (p.flavour == Flavour::Kvpress || fuzz::exactly_representable(c->regime))
    report_and_trap("chunk select: optimized output is not the canonical one where its arithmetic is the oracle's",
                    describe(s, p) + optimized() + "\ncanonical: " + positions(canonical));
  Verdict v = oracle::check_admissible(s, p, fast);
  if (!v.passed()) {
    report_and_trap("chunk select: optimized output neither canonical nor admissible",
                    describe(s, p) + optimized() + "\ncanonical: " + positions(canonical) +
                        "\nverdict: " + to_string(v.kind) + " " + v.rule + ": " + v.message);
  }
  return 0;
}
