// A suite's own RapidCheck case count, merged into the caller's RC_PARAMS rather than dropped when RC_PARAMS is
// set: `kvaudit audit` sets only the seed (reproducible reports), and the suite must still run its full count.
#pragma once

#include <cstdlib>
#include <string>

namespace kvaudit_test_support {

// Call from a static initializer, before the first property runs (RapidCheck reads RC_PARAMS once).
inline bool default_case_count(long cases) {
  const char* given = std::getenv("RC_PARAMS");
  std::string params = given ? given : "";
  if (params.find("max_success") == std::string::npos)
    params += (params.empty() ? "" : " ") + std::string("max_success=") + std::to_string(cases);
  return setenv("RC_PARAMS", params.c_str(), 1) == 0;
}

}  // namespace kvaudit_test_support
