// Conformance cases from real dump rows (scores.snapkv per layer) and the shrinker for such concrete cases.
#include <algorithm>
#include <cmath>

#include "audit/conform/case_sources.h"
#include "core/compression_ratio.h"

namespace kvaudit::conform {

const std::vector<std::string>& dump_ratios() {
  static const std::vector<std::string> ratios = {"0.5", "0.75", "0.9"};
  return ratios;
}

std::vector<ConformCase> dump_cases(const std::vector<io::PromptDump>& dumps, Method method, Flavour flavour) {
  std::vector<ConformCase> out;
  for (const auto& prompt : dumps) {
    ScoreTensor scores = prompt.scores("scores.snapkv");
    for (Index layer = 0; layer < scores.layers; ++layer) {
      for (const auto& ratio : dump_ratios()) {
        ConformCase c;
        c.heads = scores.heads;
        c.tokens = scores.tokens;
        for (Index h = 0; h < scores.heads; ++h) {
          auto row = scores.row(layer, h);
          c.values.insert(c.values.end(), row.begin(), row.end());
        }
        c.params.method = method;
        c.params.flavour = flavour;
        c.params.ratio = parse_compression_ratio(ratio, "dump ratio");
        c.params.chunk_length = method == Method::EgChunkKV ? 10 : 20;
        c.params.rescue_size = 4;
        c.origin = "dump " + prompt.name + " layer " + std::to_string(layer) + " ratio " + ratio;
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

namespace {

ConformCase with_tokens(const ConformCase& c, Index begin, Index end) {
  ConformCase out = c;
  out.tokens = end - begin;
  out.values.clear();
  for (Index h = 0; h < c.heads; ++h) {
    auto row = c.values.begin() + h * c.tokens;
    out.values.insert(out.values.end(), row + begin, row + end);
  }
  return out;
}

ConformCase without_head(const ConformCase& c, Index dropped) {
  ConformCase out = c;
  out.heads = c.heads - 1;
  out.values.clear();
  for (Index h = 0; h < c.heads; ++h) {
    if (h == dropped) continue;
    auto row = c.values.begin() + h * c.tokens;
    out.values.insert(out.values.end(), row, row + c.tokens);
  }
  return out;
}

// Values mapped onto `levels` equally spaced integers by magnitude: fewer distinct values, more ties, and
// small integers whose sums and means are exact in float32.
ConformCase quantized(const ConformCase& c, int levels) {
  ConformCase out = c;
  float top = 0.0f;
  for (float v : c.values) top = std::max(top, std::fabs(v));
  if (top == 0.0f) return out;
  for (float& v : out.values) v = std::round(v / top * static_cast<float>(levels));
  return out;
}

std::size_t distinct_values(const ConformCase& c) {
  std::vector<float> v = c.values;
  std::sort(v.begin(), v.end());
  return static_cast<std::size_t>(std::unique(v.begin(), v.end()) - v.begin());
}

bool params_valid(const ConformCase& c) {
  if (c.params.chunk_length < 1 || c.params.rescue_size < 1) return false;
  if (c.params.method == Method::EgChunkKV && c.params.flavour == Flavour::Kvpress)
    return c.params.chunk_length > 1 && c.params.chunk_length > c.params.rescue_size;
  return true;
}

std::vector<ConformCase> candidates(const ConformCase& c) {
  std::vector<ConformCase> out;
  auto add = [&](ConformCase k) {
    if (k.tokens >= 1 && k.heads >= 1 && params_valid(k) && (k.values != c.values || k.tokens != c.tokens ||
                                                             k.heads != c.heads || k.params.ratio.text != c.params.ratio.text ||
                                                             k.params.chunk_length != c.params.chunk_length ||
                                                             k.params.rescue_size != c.params.rescue_size)) {
      k.origin = c.origin + (c.origin.find(" (shrunk)") == std::string::npos ? " (shrunk)" : "");
      out.push_back(std::move(k));
    }
  };
  for (Index h = 0; c.heads > 1 && h < c.heads; ++h) add(without_head(c, h));
  for (Index keep : {c.tokens / 4, c.tokens / 2, c.tokens - c.params.chunk_length, c.tokens - 1}) {
    if (keep >= 1 && keep < c.tokens) add(with_tokens(c, 0, keep));
  }
  const Index chunk = c.params.chunk_length, complete = c.tokens / chunk;
  // Suffixes starting on a chunk boundary keep every remaining chunk's contents (and the partial tail).
  for (Index skip : {(complete / 2) * chunk, chunk, c.tokens / 2}) {
    if (skip >= 1 && skip < c.tokens) add(with_tokens(c, skip, c.tokens));
  }
  // Remove one whole complete chunk: the others, the tail and the chunk order among them are unchanged.
  for (Index i = 0; i < complete && i < 64 && c.tokens > chunk; ++i) {
    ConformCase k = with_tokens(c, 0, c.tokens - chunk);
    for (Index h = 0; h < c.heads; ++h) {
      auto src = c.values.begin() + h * c.tokens;
      auto dst = k.values.begin() + h * k.tokens;
      std::copy(src, src + i * chunk, dst);
      std::copy(src + (i + 1) * chunk, src + c.tokens, dst + i * chunk);
    }
    add(std::move(k));
  }
  // Every chunk cut to its first half (chunk length halved, the partial tail halved too): the chunk count, and so
  // any rule that depends on it (the budget in chunks), is kept while T halves. Dump rows need this step: a prefix
  // changes the chunk count, and the float and exact chunk budgets part only at some counts.
  if (chunk >= 2) {
    const Index half = chunk / 2, tail = c.tokens - complete * chunk;
    const Index tail_kept = tail == 0 ? 0 : std::max<Index>(1, std::min<Index>((tail + 1) / 2, half > 1 ? half - 1 : 1));
    ConformCase k = c;
    k.tokens = complete * half + tail_kept;
    k.params.chunk_length = half;
    if (k.params.rescue_size >= half) k.params.rescue_size = std::max<Index>(1, half - 1);
    k.values.clear();
    for (Index h = 0; h < c.heads; ++h) {
      auto row = c.values.begin() + h * c.tokens;
      for (Index i = 0; i < complete; ++i) k.values.insert(k.values.end(), row + i * chunk, row + i * chunk + half);
      k.values.insert(k.values.end(), row + complete * chunk, row + complete * chunk + tail_kept);
    }
    if (k.tokens >= 1 && k.tokens < c.tokens) add(std::move(k));
  }
  // Only quantizations that reduce the number of distinct values, so the descent cannot cycle.
  for (int levels : {2, 4, 16, 256}) {
    ConformCase k = quantized(c, levels);
    if (distinct_values(k) < distinct_values(c)) add(std::move(k));
  }
  if (c.params.ratio.text != "0.5") {
    ConformCase k = c;
    k.params.ratio = parse_compression_ratio("0.5", "shrink");
    add(std::move(k));
  }
  for (Index chunk : {Index{2}, c.params.chunk_length / 2, c.params.chunk_length - 1}) {
    if (chunk >= 1 && chunk < c.params.chunk_length) {
      ConformCase k = c;
      k.params.chunk_length = chunk;
      if (k.params.rescue_size >= chunk) k.params.rescue_size = std::max<Index>(1, chunk - 1);
      add(std::move(k));
    }
  }
  if (c.params.rescue_size > 1) {
    ConformCase k = c;
    k.params.rescue_size = 1;
    add(std::move(k));
  }
  return out;
}

}  // namespace

rc::Shrinkable<ConformCase> shrinkable_concrete(ConformCase c) {
  return rc::shrinkable::shrinkRecur(std::move(c), [](const ConformCase& v) {
    return rc::seq::fromContainer(candidates(v));
  });
}

}  // namespace kvaudit::conform
