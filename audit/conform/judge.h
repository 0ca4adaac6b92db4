// Sends one case to the implementation and judges its answer with the oracle's admissibility check.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "audit/conform/conform_case.h"
#include "audit/conform/impl_process.h"
#include <nlohmann/json.hpp>

#include "core/verdict.h"

namespace kvaudit::conform {

struct Outcome {
  std::string request_line;              // exactly what was sent, replayable
  std::optional<Selection> answer;       // absent on a protocol error or an invalid case
  std::optional<ProtocolError> error;    // the implementation crashed, hung, or answered garbage
  bool invalid_case = false;             // the oracle rejects the parameters (kvpress would assert): not judged
  Verdict verdict;                       // NotRun unless an answer was judged

  bool violates() const { return verdict.kind == VerdictKind::Violates; }
};

class Judge {
 public:
  explicit Judge(ImplProcess& process) : process_(process) {}
  // Never throws ProtocolError: it lands in Outcome::error and the process is restarted on the next call.
  Outcome run(const ConformCase& c);
  std::int64_t requests_sent() const { return next_id_; }

 private:
  ImplProcess& process_;
  std::int64_t next_id_ = 0;
};

// The canonical (lowest-index tie order) selection as a JSON value in the protocol's "kept" form.
nlohmann::json selection_json(const Selection& s);

}  // namespace kvaudit::conform
