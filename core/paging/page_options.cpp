// Page-EntroKV options -> PageParams (see page_options.h).
#include "core/paging/page_options.h"

#include "core/compression_ratio.h"
#include "core/error.h"

namespace kvaudit::paging {

PageParams parse_page_options(const PageOptions& o, const std::string& source) {
  auto where = [&](const std::string& field) {
    if (!source.empty()) return source;
    std::string flag = "--" + field;
    for (char& ch : flag)
      if (ch == '_') ch = '-';
    return flag;
  };
  auto pick = [&](const std::string& v, const std::string& field, const std::string& x, const std::string& y) {
    if (v != x && v != y) throw InputError(where(field), field, "expected " + x + " or " + y + ", got '" + v + "'");
    return v == x;
  };
  if (o.group_size < 1) throw InputError(where("group_size"), "group_size", "must be >= 1, got " + std::to_string(o.group_size));
  if (o.page_size < 1) throw InputError(where("page_size"), "page_size", "must be >= 1, got " + std::to_string(o.page_size));
  if (o.sinks < 0) throw InputError(where("sinks"), "sinks", "must be >= 0, got " + std::to_string(o.sinks));
  PageParams p;
  p.group_size = o.group_size;
  p.page_size = o.page_size;
  p.n_sink = o.sinks;
  p.ratio_text = parse_compression_ratio(o.ratio, source.empty() ? "--compression-ratio" : source).text;
  p.pooling = pick(o.pooling, "pooling", "entropy", "mean") ? PagePooling::Entropy : PagePooling::Mean;
  p.page_score = pick(o.page_score, "page_score", "sum", "max") ? PageScore::Sum : PageScore::Max;
  p.source = pick(o.source, "source", "sink-isolated", "raw") ? PoolSource::SinkIsolated : PoolSource::Raw;
  p.sink_pages = pick(o.sink_pages, "sink_pages", "reserved", "scored") ? SinkPages::Reserved : SinkPages::Scored;
  p.greedy = pick(o.greedy, "greedy", "skip-misfits", "stop-at-first-misfit") ? GreedyRule::SkipMisfits : GreedyRule::StopAtFirstMisfit;
  return p;
}

}  // namespace kvaudit::paging
