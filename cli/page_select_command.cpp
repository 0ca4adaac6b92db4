// `kvaudit page-select`: Page-EntroKV on one layer's (q_heads, T) attention; kept pages per KV group, retained
// tokens, head weights, and the verdict of the exact oracle on the same input (exit 1 if it disagrees).
#include <iostream>

#include <nlohmann/json.hpp>

#include "audit/paging_findings.h"
#include "cli/command_registry.h"
#include "cli/page_select_output.h"
#include "cli/paging_input.h"
#include "core/compression_ratio.h"
#include "core/paging/page_selector.h"

namespace {

struct PageSelectArgs {
  kvaudit::cli::AttnSource input;
  long long group_size = 0, page_size = 16, sinks = 4;
  std::string ratio, pooling = "entropy", page_score = "sum", source = "sink-isolated", sink_pages = "reserved", greedy = "skip-misfits";
};

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto a = std::make_shared<PageSelectArgs>();
  auto* cmd = root.add_subcommand("page-select", "Page-EntroKV page selection per KV group, checked against the exact oracle");
  kvaudit::cli::add_attn_options(cmd, a->input);
  cmd->add_option("--group-size", a->group_size, "G: query heads per KV head")->required();
  cmd->add_option("--page-size", a->page_size, "P: tokens per page")->capture_default_str();
  cmd->add_option("--compression-ratio", a->ratio, "rho, the fraction removed, as a decimal")->required();
  cmd->add_option("--sinks", a->sinks, "n_sink: leading positions isolated from the entropy weights")->capture_default_str();
  cmd->add_option("--pooling", a->pooling, "entropy | mean")->capture_default_str();
  cmd->add_option("--page-score", a->page_score, "sum | max")->capture_default_str();
  cmd->add_option("--source", a->source, "what is pooled: sink-isolated | raw")->capture_default_str();
  cmd->add_option("--sink-pages", a->sink_pages, "reserved | scored")->capture_default_str();
  cmd->add_option("--greedy", a->greedy, "skip-misfits | stop-at-first-misfit")->capture_default_str();
  cmd->callback([a] {
    using namespace kvaudit;
    auto pick = [](const std::string& v, const std::string& flag, const std::string& x, const std::string& y) {
      if (v != x && v != y) throw InputError(flag, flag.substr(2), "expected " + x + " or " + y + ", got '" + v + "'");
      return v == x;
    };
    paging::PageParams p;
    if (a->group_size < 1) throw InputError("--group-size", "group_size", "must be >= 1");
    if (a->page_size < 1) throw InputError("--page-size", "page_size", "must be >= 1");
    if (a->sinks < 0) throw InputError("--sinks", "sinks", "must be >= 0");
    p.group_size = a->group_size;
    p.page_size = a->page_size;
    p.n_sink = a->sinks;
    p.ratio = parse_compression_ratio(a->ratio);
    p.pooling = pick(a->pooling, "--pooling", "entropy", "mean") ? paging::Pooling::Entropy : paging::Pooling::Mean;
    p.page_score = pick(a->page_score, "--page-score", "sum", "max") ? paging::PageScore::Sum : paging::PageScore::Max;
    p.source = pick(a->source, "--source", "sink-isolated", "raw") ? paging::PoolSource::SinkIsolated : paging::PoolSource::Raw;
    p.sink_pages = pick(a->sink_pages, "--sink-pages", "reserved", "scored") ? paging::SinkPages::Reserved : paging::SinkPages::Scored;
    p.greedy = pick(a->greedy, "--greedy", "skip-misfits", "stop-at-first-misfit") ? paging::GreedyRule::SkipMisfits
                                                                                      : paging::GreedyRule::StopAtFirstMisfit;
    cli::Float32Input precision;
    const ScoreTensor attn = cli::load_attention(a->input, precision);
    if (attn.heads % p.group_size != 0)
      throw InputError("--group-size", "group_size", "q_heads " + std::to_string(attn.heads) + " is not divisible by " + std::to_string(p.group_size));
    const paging::PageSelection s = paging::select_pages(attn, p);
    const audit::SelectorComparison c = audit::compare_selector_with_oracle(attn, p);
    std::cout << cli::describe_page_selection(s, p, a->pooling, a->page_score, c, precision).dump() << "\n";
    if (!c.verdict.passed()) cli::exit_code() = 1;
  });
});

}  // namespace
