// One protocol round trip plus a family's verdict on the answer, for every method conform knows.
//
// A *family* (ChunkFamily, PageFamily, PartitionFamily) owns one method's case type, wire format, judge,
// generators and concrete shrinker; the driver (driver.hpp), the shrinker (shrinker.h) and this round trip are
// written once over that interface, so every method gets the same transport, shrinking, replay and report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/conform/impl_process.h"
#include "core/types.h"
#include "core/verdict.h"

namespace kvaudit::conform {

// How far a heuristic's answer is from the optimum, in bits: the optimum lies in [answer + lower, answer +
// upper]. certified: the optimum is known exactly (lower == upper up to rounding of the report).
struct GapInterval {
  double lower = 0.0, upper = 0.0;
  bool certified = false;
};

// What a family's judge concludes about one decoded answer.
struct Judgement {
  nlohmann::json answer;         // the answer as decoded, for the report
  Verdict verdict;               // NotRun unless judged
  bool invalid_case = false;     // the oracle rejects the parameters: not judged, never a pass
  std::optional<GapInterval> gap;  // partitions judged as a heuristic: distance to the optimum
};

struct Outcome {
  std::string request_line;              // exactly what was sent, replayable
  std::optional<nlohmann::json> answer;  // absent on a protocol error
  std::optional<ProtocolError> error;    // the implementation crashed, hung, or answered garbage
  bool invalid_case = false;
  Verdict verdict;
  std::optional<GapInterval> gap;

  bool violates() const { return verdict.kind == VerdictKind::Violates; }
};

// Sends a case with the family's encoding and judges the response with the family's judge. Never throws
// ProtocolError: it lands in Outcome::error and the process is restarted on the next call.
template <class F>
class Judge {
 public:
  Judge(const F& family, ImplProcess& process) : family_(family), process_(process) {}

  Outcome run(const typename F::Case& c) {
    Outcome out;
    const std::int64_t id = next_id_++;
    out.request_line = family_.encode(id, c);
    try {
      Judgement j = family_.judge(c, process_.exchange(out.request_line), id);
      out.answer = std::move(j.answer);
      out.verdict = std::move(j.verdict);
      out.invalid_case = j.invalid_case;
      out.gap = j.gap;
    } catch (const ProtocolError& e) {
      out.error = e;
    }
    return out;
  }
  std::int64_t requests_sent() const { return next_id_; }
  const F& family() const { return family_; }

 private:
  const F& family_;
  ImplProcess& process_;
  std::int64_t next_id_ = 0;
};

// The canonical (lowest-index tie order) chunk selection as a JSON value in the protocol's "kept" form.
nlohmann::json selection_json(const Selection& s);

}  // namespace kvaudit::conform
