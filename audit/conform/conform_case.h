// One conformance case: a (heads x T) score matrix it owns plus the selector parameters, and where it came from.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::conform {

struct ConformCase {
  Index heads = 0;
  Index tokens = 0;
  std::vector<float> values;  // row-major (heads, tokens)
  SelectorParams params;
  std::string origin;         // "generated seed=S case=N" or "dump <prompt> layer <L>": how to find it again

  HeadScores view() const { return {heads, tokens, {values.data(), values.size()}}; }
};

}  // namespace kvaudit::conform
