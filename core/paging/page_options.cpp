// Page-EntroKV options -> PageParams (see page_options.h).
#include "core/paging/page_options.h"

#include "core/compression_ratio.h"
#include "core/error.h"

namespace kvaudit::paging {

namespace {

constexpr Index kMaxInverseTemperature = 64;

std::string flag_of(const std::string& field, const std::string& source) {
  if (!source.empty()) return source;
  std::string flag = "--" + field;
  for (char& ch : flag)
    if (ch == '_') ch = '-';
  return flag;
}

// The choices each preset makes (G, P, sinks and rho are left to the caller).
PageParams preset_choices(const std::string& name, PageParams p, const std::string& source) {
  if (name.empty() || name == "kvaudit") {
    const PageParams d;
    p.pooling = d.pooling, p.page_score = d.page_score, p.source = d.source, p.sink_pages = d.sink_pages, p.greedy = d.greedy;
    p.inverse_temperature = d.inverse_temperature, p.entropy_on = d.entropy_on, p.budget_unit = d.budget_unit;
    p.page_count_rule = d.page_count_rule;
    return p;
  }
  if (name == "released" || name == "paper" || name == "entro-prefill") {
    const bool prefill = name == "entro-prefill";
    p.pooling = PagePooling::Entropy;
    p.page_score = PageScore::Max;
    p.source = PoolSource::Raw;
    p.sink_pages = SinkPages::Scored;
    p.greedy = GreedyRule::SkipMisfits;  // no effect on a page-count budget: every page costs one
    p.inverse_temperature = prefill ? 1 : 2;
    p.entropy_on = prefill ? EntropySource::Raw : EntropySource::SinkIsolated;
    p.budget_unit = BudgetUnit::Pages;
    p.page_count_rule = prefill ? PageCountRule::EntroPrefill : PageCountRule::Paper;
    return p;
  }
  std::string names;
  for (const auto& n : page_preset_names()) names += (names.empty() ? "" : ", ") + n;
  throw InputError(flag_of("preset", source), "preset", "expected one of " + names + ", got '" + name + "'");
}

}  // namespace

const std::vector<std::string>& page_preset_names() {
  static const std::vector<std::string> names{"kvaudit", "released", "paper", "entro-prefill"};
  return names;
}

Index parse_inverse_temperature(const std::string& text, const std::string& source) {
  // Exact decimal: tau = num / 10^d, 1/tau = 10^d / num must be an integer.
  long long num = 0, den = 1;
  bool digits = false, point = false, ok = text.size() <= 20;
  for (char c : text) {
    if (!ok) break;
    if (c == '.' && !point) point = true;
    else if (c >= '0' && c <= '9') digits = true, num = num * 10 + (c - '0'), den *= point ? 10 : 1;
    else ok = false;
  }
  if (!ok || !digits || num == 0 || den % num != 0 || den / num > kMaxInverseTemperature)
    throw InputError(source, "temperature", "expected tau as a decimal with 1/tau an integer in [1, " + std::to_string(kMaxInverseTemperature) +
                                                "] (1, 0.5, 0.25, 0.2, ...), got '" + text + "'");
  return den / num;
}

std::string temperature_text(Index k) {
  if (k == 1) return "1";
  // 1/k terminates iff k = 2^a 5^b: long division, at most 64 digits.
  std::string out = "0.";
  Index rem = 1;
  for (int i = 0; i < 64 && rem != 0; ++i) {
    rem *= 10;
    out += static_cast<char>('0' + rem / k);
    rem %= k;
  }
  return rem == 0 ? out : "1/" + std::to_string(k);
}

PageParams apply_page_choices(const PageOptions& o, PageParams p, const std::string& source) {
  auto where = [&](const std::string& field) { return flag_of(field, source); };
  auto pick = [&](const std::string& v, const std::string& field, const std::string& x, const std::string& y) {
    if (v != x && v != y) throw InputError(where(field), field, "expected " + x + " or " + y + ", got '" + v + "'");
    return v == x;
  };
  if (!o.preset.empty()) p = preset_choices(o.preset, p, source);
  if (!o.pooling.empty()) p.pooling = pick(o.pooling, "pooling", "entropy", "mean") ? PagePooling::Entropy : PagePooling::Mean;
  if (!o.page_score.empty()) p.page_score = pick(o.page_score, "page_score", "sum", "max") ? PageScore::Sum : PageScore::Max;
  if (!o.source.empty()) p.source = pick(o.source, "source", "sink-isolated", "raw") ? PoolSource::SinkIsolated : PoolSource::Raw;
  if (!o.sink_pages.empty())
    p.sink_pages = pick(o.sink_pages, "sink_pages", "reserved", "scored") ? SinkPages::Reserved : SinkPages::Scored;
  if (!o.greedy.empty())
    p.greedy = pick(o.greedy, "greedy", "skip-misfits", "stop-at-first-misfit") ? GreedyRule::SkipMisfits : GreedyRule::StopAtFirstMisfit;
  if (!o.temperature.empty()) p.inverse_temperature = parse_inverse_temperature(o.temperature, where("temperature"));
  if (!o.entropy_on.empty())
    p.entropy_on = pick(o.entropy_on, "entropy_on", "sink-isolated", "raw") ? EntropySource::SinkIsolated : EntropySource::Raw;
  if (!o.budget_unit.empty()) p.budget_unit = pick(o.budget_unit, "budget_unit", "tokens", "pages") ? BudgetUnit::Tokens : BudgetUnit::Pages;
  if (!o.page_count_rule.empty())
    p.page_count_rule = pick(o.page_count_rule, "page_count_rule", "paper", "entro-prefill") ? PageCountRule::Paper : PageCountRule::EntroPrefill;
  return p;
}

PageParams parse_page_options(const PageOptions& o, const std::string& source) {
  auto where = [&](const std::string& field) { return flag_of(field, source); };
  if (o.group_size < 1) throw InputError(where("group_size"), "group_size", "must be >= 1, got " + std::to_string(o.group_size));
  if (o.page_size < 1) throw InputError(where("page_size"), "page_size", "must be >= 1, got " + std::to_string(o.page_size));
  if (o.sinks < 0) throw InputError(where("sinks"), "sinks", "must be >= 0, got " + std::to_string(o.sinks));
  PageParams p;
  p.group_size = o.group_size;
  p.page_size = o.page_size;
  p.n_sink = o.sinks;
  p.ratio_text = parse_compression_ratio(o.ratio, source.empty() ? "--compression-ratio" : source).text;
  return apply_page_choices(o, p, source);
}

}  // namespace kvaudit::paging
