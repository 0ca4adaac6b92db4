// The ChunkKV / EG-ChunkKV family of `kvaudit conform` (protocol.h): token selections judged by the oracle's
// admissibility check (oracle::check_admissible), cases from case_sources.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "audit/conform/conform_case.h"
#include "audit/conform/judge.h"

namespace kvaudit::conform {

class ChunkFamily {
 public:
  using Case = ConformCase;
  // max_size > 0 cuts generated cases and dump rows to their first max_size tokens. strict_scores: replayed
  // scores that are not float32 values are refused instead of rounded (decode_request's Float32Input).
  ChunkFamily(Method method, Flavour flavour, Index max_size, bool strict_scores = false)
      : method_(method), flavour_(flavour), max_size_(max_size), strict_scores_(strict_scores) {}

  const char* name() const;
  nlohmann::json report_fields() const;
  std::string encode(std::int64_t id, const Case& c) const;
  Judgement judge(const Case& c, const std::string& response, std::int64_t id) const;
  rc::Gen<Case> generator() const;
  rc::Shrinkable<Case> concrete(Case c) const;
  Case decode(const std::string& line, const std::string& source) const;
  std::vector<Case> dump_cases(const std::string& dir) const;
  nlohmann::json summary(const Case& c) const;
  nlohmann::json canonical(const Case& c) const;

 private:
  Method method_;
  Flavour flavour_;
  Index max_size_;
  bool strict_scores_;
};

}  // namespace kvaudit::conform
