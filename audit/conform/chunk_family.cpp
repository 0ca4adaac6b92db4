// ChunkKV / EG-ChunkKV conform family: one protocol round trip plus the oracle's admissibility verdict.
#include "audit/conform/chunk_family.h"

#include <algorithm>
#include <stdexcept>

#include "audit/conform/case_sources.h"
#include "audit/conform/protocol.h"
#include "core/io/dump.h"
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

// The first `n` tokens of every head (--max-size).
ConformCase prefix(ConformCase c, Index n) {
  if (n <= 0 || c.tokens <= n) return c;
  std::vector<float> v;
  for (Index h = 0; h < c.heads; ++h) {
    auto row = c.values.begin() + h * c.tokens;
    v.insert(v.end(), row, row + n);
  }
  c.values = std::move(v);
  c.tokens = n;
  return c;
}

}  // namespace

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
  const Selection answer = normalize_form(decode_response(response, id), c);
  j.answer = selection_json(answer);
  try {
    j.verdict = oracle::check_admissible(c.view(), c.params, answer);
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
  return rc::gen::map(generated_cases(method_, flavour_), [n](ConformCase c) { return prefix(std::move(c), n); });
}

rc::Shrinkable<ConformCase> ChunkFamily::concrete(Case c) const { return shrinkable_concrete(std::move(c)); }

ConformCase ChunkFamily::decode(const std::string& line, const std::string& source) const {
  return decode_request(line, flavour_, source);
}

std::vector<ConformCase> ChunkFamily::dump_cases(const std::string& dir) const {
  std::vector<ConformCase> out = conform::dump_cases(io::load_dumps(dir), method_, flavour_);
  for (auto& c : out) c = prefix(std::move(c), max_size_);
  return out;
}

nlohmann::json ChunkFamily::summary(const Case& c) const {
  return {{"heads", c.heads}, {"tokens", c.tokens}, {"origin", c.origin}};
}

nlohmann::json ChunkFamily::canonical(const Case& c) const { return selection_json(oracle::select(c.view(), c.params)); }

}  // namespace kvaudit::conform
