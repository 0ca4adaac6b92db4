// Entropy-budgeted partition conform family: wire format, the checker (exact H <= R, certified solver), and
// the family's judge.
#include "audit/conform/partition_family.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "audit/conform/protocol.h"
#include "core/error.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"

namespace kvaudit::conform {

namespace {

using Decision = oracle::ExactPrefix::Decision;

void validate(const PartitionCase& c) {
  if (c.p.empty()) throw std::invalid_argument("empty probability vector");
  double total = 0;
  for (double v : c.p) {
    if (!std::isfinite(v) || v < 0) throw std::invalid_argument("probabilities must be finite and >= 0");
    total += v;
  }
  if (!(total > 0)) throw std::invalid_argument("probabilities have no mass");
  if (!std::isfinite(c.budget_bits)) throw std::invalid_argument("entropy_budget must be finite");
  const Index n = static_cast<Index>(c.p.size());
  if (c.groups && (*c.groups < 1 || *c.groups > n)) throw std::invalid_argument("groups must be in [1, n]");
}

std::string list_text(const std::vector<Index>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string bits(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

oracle::PartitionAnswer solve(const PartitionCase& c, std::int64_t max_nodes = kPartitionJudgeNodes) {
  oracle::ExactLimits limits;
  limits.max_nodes = max_nodes;
  limits.branch_first_nodes = std::min(limits.branch_first_nodes, max_nodes / 2);
  limits.max_seconds = 1e9;  // the node budget decides, so the verdict is the same on every machine
  return oracle::solve_exact({c.p, c.budget_bits, c.groups}, limits);
}

void append_double(std::string& out, double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}


}  // namespace

PartitionVerdict judge_partition(const PartitionCase& c, const PartitionReply& r, PartitionClaim claim,
                                 std::int64_t max_nodes) {
  validate(c);
  const Index n = static_cast<Index>(c.p.size());
  const double R = c.budget_bits;
  PartitionVerdict out;
  if (r.infeasible) {
    const oracle::PartitionAnswer best = solve(c, max_nodes);
    if (best.feasible) {
      const oracle::ExactPrefix prefix(c.p);
      const auto full = oracle::full_bounds(best.cuts, n);
      const Decision d = prefix.compare_with(full, R);
      if (d == Decision::Less || d == Decision::Equal) {
        out.verdict = Verdict::violates("false-infeasible", "claimed infeasible, but boundaries " + list_text(best.cuts) +
                                                                " have H = " + bits(best.entropy_bits) + " <= R = " + bits(R));
        return out;
      }
    }
    if (!best.feasible && best.certified) {
      out.verdict = Verdict::conforms();
      out.gap = GapInterval{0.0, 0.0, true};
    } else {
      out.verdict = Verdict::inconclusive("claimed infeasible; the solver neither found a partition within R nor "
                                          "certified infeasibility: " + best.note);
    }
    return out;
  }
  // Stage 1: the boundaries themselves.
  for (std::size_t i = 0; i < r.boundaries.size(); ++i) {
    const Index b = r.boundaries[i];
    if (b < 1 || b > n - 1) {
      out.verdict = Verdict::violates("range", "boundary " + std::to_string(b) + " outside [1, " + std::to_string(n - 1) +
                                                   "] (n = " + std::to_string(n) + ")");
      return out;
    }
    if (i > 0 && b <= r.boundaries[i - 1]) {
      out.verdict = Verdict::violates("order", "boundaries " + list_text(r.boundaries) + " are not strictly increasing");
      return out;
    }
  }
  if (c.groups && static_cast<Index>(r.boundaries.size()) != *c.groups - 1) {
    out.verdict = Verdict::violates("groups", std::to_string(r.boundaries.size() + 1) + " groups, expected " +
                                                  std::to_string(*c.groups));
    return out;
  }
  // Stage 2: H <= R, decided exactly.
  const oracle::ExactPrefix prefix(c.p);
  const auto full = oracle::full_bounds(r.boundaries, n);
  const double H = prefix.entropy_extended(full);
  const Decision d = prefix.compare_with(full, R);
  if (d == Decision::Greater) {
    out.verdict = Verdict::violates("over-budget", "H = " + bits(H) + " bits > R = " + bits(R));
    return out;
  }
  // Stage 3: against the certified optimum.
  const oracle::PartitionAnswer best = solve(c, max_nodes);
  if (!best.feasible) {
    out.verdict = Verdict::inconclusive("the answer is within R but the solver found no partition within R (" +
                                        best.note + "): oracle disagreement");
    return out;
  }
  const Decision vs = prefix.compare(full, oracle::full_bounds(best.cuts, n));
  const double upper = best.certified ? best.entropy_bits : best.optimum_upper;
  if (vs == Decision::Less) {
    if (claim == PartitionClaim::Exact) {
      out.verdict = Verdict::violates("not-optimal", "H = " + bits(H) + " bits, but boundaries " + list_text(best.cuts) +
                                                         " reach " + bits(best.entropy_bits) + " <= R = " + bits(R));
      return out;
    }
    out.verdict = Verdict::conforms();
    // A certified Less is a positive gap even when the doubles round to the same value.
    out.gap = GapInterval{std::max(best.entropy_bits - H, 0x1p-60), std::max(upper - H, 0x1p-60), best.certified};
    return out;
  }
  if (vs == Decision::Greater && best.certified) {
    out.verdict = Verdict::inconclusive("the answer beats the certified optimum: oracle disagreement");
    return out;
  }
  if (!best.certified && claim == PartitionClaim::Exact) {
    out.verdict = Verdict::inconclusive("H = " + bits(H) + " lies inside the uncertified bracket [" +
                                        bits(best.entropy_bits) + ", " + bits(upper) + "]: " + best.note);
    return out;
  }
  out.verdict = Verdict::conforms();
  out.gap = GapInterval{0.0, std::max(upper - H, 0.0), best.certified};
  return out;
}

nlohmann::json canonical_partition(const PartitionCase& c) {
  validate(c);
  const oracle::PartitionAnswer best = solve(c);
  nlohmann::json j;
  if (best.feasible) j["boundaries"] = best.cuts;
  else j["infeasible"] = true;
  j["entropy_bits"] = best.feasible ? nlohmann::json(best.entropy_bits) : nlohmann::json(nullptr);
  j["certified"] = best.certified;
  return j;
}

std::string encode_partition_request(std::int64_t id, const PartitionCase& c) {
  std::string out = "{\"id\": " + std::to_string(id) + ", \"method\": \"partition\", \"probs\": [";
  for (std::size_t i = 0; i < c.p.size(); ++i) {
    if (!std::isfinite(c.p[i])) throw InputError(c.origin, "probs", "non-finite value at " + std::to_string(i));
    if (i) out += ", ";
    append_double(out, c.p[i]);
  }
  if (!std::isfinite(c.budget_bits)) throw InputError(c.origin, "entropy_budget", "non-finite");
  out += "], \"entropy_budget\": ";
  append_double(out, c.budget_bits);
  out += ", \"groups\": " + (c.groups ? std::to_string(*c.groups) : std::string("null")) + "}";
  return out;
}

PartitionCase decode_partition_request(const std::string& line, const std::string& source) {
  nlohmann::json j = parse_request_object(line, source);
  PartitionCase c;
  c.origin = source;
  if (j.contains("method") && j["method"] != "partition")
    throw InputError(source, "method", "expected \"partition\", got " + j["method"].dump());
  if (!j.contains("probs")) throw InputError(source, "probs", "missing");
  if (!j["probs"].is_array() || j["probs"].empty())
    throw InputError(source, "probs", "must be a non-empty array of numbers, got " + clip(j["probs"].dump()));
  for (const auto& v : j["probs"]) {
    if (!v.is_number()) throw InputError(source, "probs", "holds a non-number: " + v.dump());
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0) throw InputError(source, "probs", "value " + v.dump() + " is negative or not finite");
    c.p.push_back(d);
  }
  if (!j.contains("entropy_budget")) throw InputError(source, "entropy_budget", "missing");
  if (!j["entropy_budget"].is_number())
    throw InputError(source, "entropy_budget", "must be a number, got " + clip(j["entropy_budget"].dump()));
  c.budget_bits = j["entropy_budget"].get<double>();
  if (!std::isfinite(c.budget_bits)) throw InputError(source, "entropy_budget", "must be finite");
  if (j.contains("groups") && !j["groups"].is_null()) {
    const auto& g = j["groups"];
    if (!g.is_number_integer() || g.get<std::int64_t>() < 1 || g.get<std::int64_t>() > static_cast<std::int64_t>(c.p.size()))
      throw InputError(source, "groups", "must be null or an integer in [1, n], got " + g.dump());
    c.groups = g.get<Index>();
  }
  return c;
}

PartitionReply decode_partition_response(const std::string& line, std::int64_t expected_id) {
  const nlohmann::json j = parse_response_envelope(line, expected_id);
  PartitionReply r;
  const std::string where = "response " + std::to_string(expected_id) + ": ";
  if (j.contains("infeasible") && j["infeasible"] == true) {
    if (j.contains("boundaries") && !j["boundaries"].is_null())
      throw ProtocolError(ProtocolErrorKind::BadResponse, where + "both \"infeasible\" and \"boundaries\"");
    r.infeasible = true;
    return r;
  }
  if (!j.contains("boundaries") || !j["boundaries"].is_array()) {
    std::string why = j.contains("error") ? "the implementation answered an error: " + j["error"].dump()
                                          : "no \"boundaries\" array and no \"infeasible\": true: '" + clip(line) + "'";
    throw ProtocolError(ProtocolErrorKind::BadResponse, where + why);
  }
  for (const auto& v : j["boundaries"]) {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      throw ProtocolError(ProtocolErrorKind::BadResponse, where + "\"boundaries\" holds a non-integer: " + v.dump());
    r.boundaries.push_back(v.get<Index>());
  }
  return r;
}

Judgement PartitionFamily::judge(const Case& c, const std::string& response, std::int64_t id) const {
  Judgement j;
  const PartitionReply r = decode_partition_response(response, id);
  if (r.infeasible) j.answer = {{"infeasible", true}};
  else j.answer = {{"boundaries", r.boundaries}};
  try {
    PartitionVerdict v = judge_partition(c, r, claim_);
    j.verdict = std::move(v.verdict);
    if (claim_ == PartitionClaim::Heuristic) j.gap = v.gap;  // under --claim exact a conforming answer is optimal
  } catch (const std::invalid_argument& e) {
    j.invalid_case = true;
    j.verdict = Verdict::not_run(std::string("oracle rejects the case: ") + e.what());
  }
  return j;
}

nlohmann::json PartitionFamily::summary(const Case& c) const {
  return {{"n", c.p.size()}, {"groups", c.groups ? nlohmann::json(*c.groups) : nlohmann::json(nullptr)},
          {"entropy_budget", c.budget_bits}, {"origin", c.origin}};
}

}  // namespace kvaudit::conform
