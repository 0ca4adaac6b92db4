// One protocol round trip plus the oracle's verdict on the answer.
#include "audit/conform/judge.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "oracle/chunk_selection.h"

namespace kvaudit::conform {

Outcome Judge::run(const ConformCase& c) {
  Outcome out;
  std::int64_t id = next_id_++;
  out.request_line = encode_request(id, c);
  try {
    out.answer = decode_response(process_.exchange(out.request_line), id);
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
