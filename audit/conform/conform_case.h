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

  // The first `n` tokens of every head (--max-size; a case without its trailing partial chunk).
  ConformCase prefix(Index n) const {
    if (n <= 0 || tokens <= n) return *this;
    ConformCase c = *this;
    c.values.clear();
    for (Index h = 0; h < heads; ++h) c.values.insert(c.values.end(), values.begin() + h * tokens, values.begin() + h * tokens + n);
    c.tokens = n;
    return c;
  }
};

}  // namespace kvaudit::conform
