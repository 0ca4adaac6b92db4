// The entropy-budgeted partition family of `kvaudit conform` (docs/specification.md section 4): an implementation returns
// boundaries (or claims infeasibility); validity and H <= R are decided exactly (oracle/partition_arith.h),
// infeasibility claims and optimality against the certified solver (oracle/partition_exact.h).
//
// Request  {"id": 5, "method": "partition", "probs": [...n doubles...], "entropy_budget": 2.5, "groups": 4}
//          ("groups": null is the free form: any number of groups)
// Response {"id": 5, "boundaries": [b_1, ..., b_{m-1}]}   groups (b_{k-1}, b_k], b_0 = 0, b_m = n
//          {"id": 5, "infeasible": true}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "audit/conform/conform_run.h"
#include "audit/conform/judge.h"
#include "core/verdict.h"

namespace kvaudit::conform {

struct PartitionCase {
  std::vector<double> p;         // n probabilities (finite, >= 0)
  double budget_bits = 0.0;      // R
  std::optional<Index> groups;   // m; nullopt = free form
  std::string origin;
};

struct PartitionReply {
  bool infeasible = false;
  std::vector<Index> boundaries;  // as sent (b_1..b_{m-1})
};

struct PartitionVerdict {
  Verdict verdict;
  std::optional<GapInterval> gap;  // heuristic claim, judged answers only
};

// Node budget of the certified solver per judged case (deterministic: no time limit decides a verdict). At the
// generators' sizes (n <= 24, m <= 8) every case is certified well inside it; an uncertified case is
// inconclusive under --claim exact, and enters the heuristic report by its proven bracket.
constexpr std::int64_t kPartitionJudgeNodes = 20'000'000;

// Verdict on a reply. Throws std::invalid_argument for a case the oracle rejects (empty p, negative or
// non-finite entries, zero total mass, m outside [1, n], non-finite R). Rules, in order: "range" (a boundary
// outside [1, n-1]), "order" (not strictly increasing), "groups" (fixed m: not m - 1 boundaries),
// "over-budget" (H > R, decided exactly), "false-infeasible" (the solver has a partition with H <= R),
// "not-optimal" (claim exact: a partition with H <= R has larger entropy).
PartitionVerdict judge_partition(const PartitionCase& c, const PartitionReply& r, PartitionClaim claim,
                                 std::int64_t max_nodes = kPartitionJudgeNodes);

// The certified solver's answer as a reply ({"boundaries": [...]} or {"infeasible": true}), with its status.
nlohmann::json canonical_partition(const PartitionCase& c);

std::string encode_partition_request(std::int64_t id, const PartitionCase& c);
PartitionCase decode_partition_request(const std::string& line, const std::string& source);  // throws InputError
PartitionReply decode_partition_response(const std::string& line, std::int64_t expected_id);  // throws ProtocolError

// Generated cases: heavy ties, dyadic rows (exact entropies, so H = R exactly happens), one dominant mass,
// zeros, distinct values; fixed m (1..8) and the free form; R at fractions of the achievable range, at the
// entropy of a random partition, at 0, below the minimum (infeasible). n <= max_size when > 0 (else 24).
rc::Gen<PartitionCase> partition_cases(Index max_size);
// attention.last_query rows of the dumps bucketed into n = min(32, max_size) masses, m = 8 and the free form.
std::vector<PartitionCase> partition_dump_cases(const std::string& dir, Index max_size);
// Concrete shrinks: merge two adjacent masses, drop a mass (renormalized), keep a prefix, fewer groups, a
// rounder budget, fewer distinct values.
rc::Shrinkable<PartitionCase> shrinkable_partition_case(PartitionCase c);

class PartitionFamily {
 public:
  using Case = PartitionCase;
  PartitionFamily(Index max_size, PartitionClaim claim) : max_size_(max_size), claim_(claim) {}

  const char* name() const { return "partition"; }
  nlohmann::json report_fields() const { return {{"claim", claim_ == PartitionClaim::Exact ? "exact" : "heuristic"}}; }
  std::string encode(std::int64_t id, const Case& c) const { return encode_partition_request(id, c); }
  Judgement judge(const Case& c, const std::string& response, std::int64_t id) const;
  rc::Gen<Case> generator() const { return partition_cases(max_size_); }
  rc::Shrinkable<Case> concrete(Case c) const { return shrinkable_partition_case(std::move(c)); }
  Case decode(const std::string& line, const std::string& source) const { return decode_partition_request(line, source); }
  std::vector<Case> dump_cases(const std::string& dir) const { return partition_dump_cases(dir, max_size_); }
  nlohmann::json summary(const Case& c) const;
  nlohmann::json canonical(const Case& c) const { return canonical_partition(c); }

 private:
  Index max_size_;
  PartitionClaim claim_;
};

}  // namespace kvaudit::conform
