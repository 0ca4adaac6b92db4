// What every question returns to a front end: one JSON object, built in one place, and the verdict kind that
// decides the CLI's exit code and Python's status. The verdict stays typed until a front end renders it.
#pragma once

#include <nlohmann/json.hpp>

#include "core/verdict.h"

namespace kvaudit::api {

struct Answer {
  nlohmann::json body;                          // what `kvaudit <command>` prints and Python returns
  VerdictKind verdict = VerdictKind::Conforms;  // a plain answer conforms; a check or a failed self-check may not
};

// The CLI's exit code for a verdict: 0 conforms, 1 violates, 3 neither (inconclusive, not run, unsupported:
// never a pass, never a finding). Bad input is 2, decided where InputError is caught.
inline int exit_code(VerdictKind k) { return k == VerdictKind::Conforms ? 0 : k == VerdictKind::Violates ? 1 : 3; }

}  // namespace kvaudit::api
