// One protocol round trip plus the oracle's verdict on the answer.
#include "audit/conform/judge.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "oracle/chunk_selection.h"

namespace kvaudit::conform {

namespace {

// A shared list and H identical per-head lists describe the same cache; the oracle expects per-head lists
// exactly where kvpress keeps per-head sets (ChunkKV's fallback with no complete chunk) and one list
// elsewhere. Convert between the two forms only when they mean the same thing, so an implementation is
// free to always send one form; lists that differ are never merged.
Selection normalize_form(Selection s, const ConformCase& c) {
  bool per_head_expected = false;
  if (c.params.method == Method::ChunkKV && c.params.flavour == Flavour::Kvpress && c.tokens >= 1 &&
      c.params.chunk_length >= 1 && !c.params.ratio.text.empty()) {
    try {
      per_head_expected = oracle::chunkkv_budget(c.tokens, c.params).fallback;
    } catch (const std::invalid_argument&) {
      return s;  // invalid case: check_admissible says so
    }
  }
  if (per_head_expected && s.kept.size() == 1 && c.heads > 1) {
    s.kept.assign(static_cast<std::size_t>(c.heads), s.kept[0]);
  } else if (!per_head_expected && s.kept.size() > 1 &&
             std::all_of(s.kept.begin(), s.kept.end(), [&](const Positions& p) { return p == s.kept[0]; })) {
    s.kept.resize(1);
  }
  return s;
}

}  // namespace

Outcome Judge::run(const ConformCase& c) {
  Outcome out;
  std::int64_t id = next_id_++;
  out.request_line = encode_request(id, c);
  try {
    out.answer = normalize_form(decode_response(process_.exchange(out.request_line), id), c);
  } catch (const ProtocolError& e) {
    out.error = e;
    return out;
  }
  try {
    out.verdict = oracle::check_admissible(c.view(), c.params, *out.answer);
    // Unsupported: parameters the flavour rejects (kvpress would assert). The case is not judged at all.
    out.invalid_case = out.verdict.kind == VerdictKind::Unsupported;
  } catch (const std::invalid_argument& e) {
    out.invalid_case = true;
    out.verdict = Verdict::not_run(std::string("oracle rejects the case: ") + e.what());
  }
  return out;
}

nlohmann::json selection_json(const Selection& s) {
  if (s.kept.size() == 1) return s.kept[0];
  return s.kept;
}

}  // namespace kvaudit::conform
