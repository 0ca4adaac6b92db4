// ChunkKV / EG-ChunkKV conform family: one protocol round trip judged by the one chunk checker
// (audit/chunk_check.h: the oracle's admissibility, and the known mistake that explains a non-conforming answer).
#include "audit/conform/chunk_family.h"

#include <algorithm>
#include <stdexcept>

#include "audit/chunk_check.h"
#include "audit/conform/case_sources.h"
#include "audit/conform/protocol.h"
#include "core/io/dump.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::conform {

nlohmann::json selection_json(const Selection& s) {
  if (s.kept.size() == 1) return s.kept[0];
  return s.kept;
}

const char* ChunkFamily::name() const { return method_name(method_); }

nlohmann::json ChunkFamily::report_fields() const {
  return {{"flavour", flavour_ == Flavour::Kvpress ? "kvpress" : "exact"}};
}

std::string ChunkFamily::encode(std::int64_t id, const Case& c) const { return encode_request(id, c); }

Judgement ChunkFamily::judge(const Case& c, const std::string& response, std::int64_t id) const {
  Judgement j;
  const Selection answer = audit::normalize_chunk_claim(decode_response(response, id), c.view(), c.params);
  j.answer = selection_json(answer);
  try {
    j.verdict = audit::check_chunk_claim(c.view(), c.params, answer);
    // Unsupported: parameters the flavour rejects (kvpress would assert). The case is not judged at all.
    j.invalid_case = j.verdict.kind == VerdictKind::Unsupported;
  } catch (const std::invalid_argument& e) {
    j.invalid_case = true;
    j.verdict = Verdict::not_run(std::string("oracle rejects the case: ") + e.what());
  }
  return j;
}

rc::Gen<ConformCase> ChunkFamily::generator() const {
  const Index n = max_size_;
  if (n <= 0) return generated_cases(method_, flavour_);
  return rc::gen::map(generated_cases(method_, flavour_), [n](ConformCase c) { return c.prefix(n); });
}

rc::Shrinkable<ConformCase> ChunkFamily::concrete(Case c) const { return shrinkable_concrete(std::move(c)); }

ConformCase ChunkFamily::decode(const std::string& line, const std::string& source) const {
  return decode_request(line, flavour_, source, strict_scores_ ? Float32Input::Strict : Float32Input::Round);
}

std::vector<ConformCase> ChunkFamily::dump_cases(const std::string& dir) const {
  std::vector<ConformCase> out = conform::dump_cases(io::load_dumps(dir), method_, flavour_);
  for (auto& c : out) c = c.prefix(max_size_);
  return out;
}

nlohmann::json ChunkFamily::summary(const Case& c) const {
  return {{"heads", c.heads}, {"tokens", c.tokens}, {"origin", c.origin}};
}

nlohmann::json ChunkFamily::canonical(const Case& c) const { return selection_json(oracle::select(c.view(), c.params)); }

}  // namespace kvaudit::conform
