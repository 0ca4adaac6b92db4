// `kvaudit conform`: check a foreign ChunkKV / EG-ChunkKV / Page-EntroKV / partition implementation over the
// line-JSON protocol (docs/conform.md). The judging is audit/conform's; this file only maps flags.
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "audit/conform/conform_run.h"
#include "audit/conform/impl_process.h"
#include "audit/conform/protocol.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "core/io/atomic_file.h"

namespace {

struct Args {
  std::string method = "eg-chunkkv";
  std::string flavour = "kvpress";
  std::string impl;
  int cases = 200;
  std::uint64_t seed = 1;
  std::string dumps;
  int timeout_ms = 10000;
  int startup_timeout_ms = 120000;
  std::string report;
  std::string replay;
  bool replay_strict = false;
  kvaudit::Index max_size = 0;
  std::string claim = "heuristic";
  std::string precision = "float32";
  std::string preset;
  std::vector<std::string> page_knobs;  // KEY=VALUE, KEY a request field
};

// --preset and --page-knob KEY=VALUE (KEY one of the request's choice fields) as PageOptions, checked once here.
std::optional<kvaudit::paging::PageOptions> page_choices(const Args& a) {
  if (a.preset.empty() && a.page_knobs.empty()) return std::nullopt;
  kvaudit::paging::PageOptions o;
  o.preset = a.preset;
  for (const std::string& kv : a.page_knobs) {
    const auto eq = kv.find('=');
    const std::string key = kv.substr(0, eq), value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    std::string* field = key == "pooling" ? &o.pooling : key == "page_score" ? &o.page_score : key == "source" ? &o.source
                         : key == "sink_pages" ? &o.sink_pages : key == "greedy" ? &o.greedy : key == "temperature" ? &o.temperature
                         : key == "entropy_on" ? &o.entropy_on : key == "budget_unit" ? &o.budget_unit
                         : key == "page_count_rule" ? &o.page_count_rule : nullptr;
    if (field == nullptr || value.empty())
      throw kvaudit::InputError("--page-knob", "page_knob",
                                "expected KEY=VALUE with KEY one of pooling, temperature, entropy_on, source, page_score, sink_pages, "
                                "budget_unit, page_count_rule, greedy; got '" + kv + "'");
    *field = value;
  }
  kvaudit::paging::apply_page_choices(o, kvaudit::PageParams{}, "--page-knob");  // throws on a bad value
  return o;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw kvaudit::InputError(path, "file", "cannot be read");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(line);
  }
  if (lines.empty()) throw kvaudit::InputError(path, "file", "holds no request line");
  return lines;
}

// SIGINT / SIGTERM / SIGHUP: the implementation runs in its own process group (so a timeout can kill all of
// it), which a terminal's Ctrl-C does not reach; kill that group, say so on one line, and exit 128 + signal
// without writing a report (the report is only ever written whole, at the end). Async-signal-safe only.
void on_interrupt(int sig) {
  kvaudit::conform::kill_running_impl_groups();
  const char* name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
  const char* parts[] = {"kvaudit conform: interrupted by ", name,
                         "; the implementation's process group was killed; no report written\n"};
  for (const char* p : parts) {
    if (::write(STDERR_FILENO, p, std::strlen(p)) < 0) break;
  }
  ::_exit(128 + sig);
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, s);  // one handler at a time
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<Args>();
  auto* cmd = root.add_subcommand(
      "conform",
      "Check a foreign ChunkKV / EG-ChunkKV / Page-EntroKV / partition implementation: JSON lines over its "
      "stdin/stdout (docs/conform.md)");
  cmd->add_option("--method", args->method, "chunkkv | eg-chunkkv | page-entrokv | partition")
      ->check(CLI::IsMember({"chunkkv", "eg-chunkkv", "page-entrokv", "partition"}));
  cmd->add_option("--impl", args->impl, "Shell command serving the protocol (run with /bin/sh -c)")->required();
  cmd->add_option("--flavour", args->flavour, "kvpress (released code, float budget) | exact (seeds, exact budget)")
      ->check(CLI::IsMember({"kvpress", "exact"}));
  cmd->add_option("--cases", args->cases, "Generated cases");
  cmd->add_option("--max-size", args->max_size,
                  "Bound on generated sizes (T for chunk and page cases, n for partitions); shrinking never exceeds it")
      ->check(CLI::Range(kvaudit::Index{1}, kvaudit::Index{1} << 40));
  cmd->add_option("--claim", args->claim,
                  "partition: exact (every answer must reach the certified optimum) | heuristic (gap reported)")
      ->check(CLI::IsMember({"exact", "heuristic"}));
  cmd->add_option("--precision", args->precision,
                  "page-entrokv: what the implementation computes page scores in: float32 | float64 | exact | a relative "
                  "tolerance (docs/page-entrokv.md)")
      ->capture_default_str();
  cmd->add_option("--preset", args->preset,
                  "page-entrokv: kvaudit | released | paper | entro-prefill, sent on every generated and dump case");
  cmd->add_option("--page-knob", args->page_knobs,
                  "page-entrokv: KEY=VALUE (a request field: temperature=0.5, budget_unit=pages, ...) fixed on every "
                  "generated and dump case, over --preset; repeatable");
  cmd->add_option("--seed", args->seed, "Seed of the case generator");
  cmd->add_option("--dumps", args->dumps, "Also run every scores.snapkv row of the dumps in DIR");
  cmd->add_option("--timeout-ms", args->timeout_ms, "Per-request timeout in milliseconds");
  cmd->add_option("--startup-timeout-ms", args->startup_timeout_ms,
                  "Timeout of the first request after each (re)start, for slow-starting interpreters");
  cmd->add_option("--report", args->report, "Write the JSON report to FILE (atomically)");
  cmd->add_option("--replay", args->replay,
                  "Run the request lines in FILE instead of generated cases; scores (chunk methods) and attention values "
                  "(page-entrokv) that are not float32 values are rounded to the nearest float32 (docs/conform.md)");
  cmd->add_flag("--replay-strict", args->replay_strict,
                "With --replay: refuse scores / attention values that are not float32 values instead of rounding them");
  cmd->callback([args] {
    kvaudit::conform::ConformOptions o;
    o.method = kvaudit::conform::parse_conform_method(args->method, "--method");
    o.flavour = args->flavour == "exact" ? kvaudit::Flavour::Exact : kvaudit::Flavour::Kvpress;
    o.impl = args->impl;
    o.cases = args->cases;
    o.seed = args->seed;
    o.dumps_dir = args->dumps;
    o.timeout_ms = args->timeout_ms;
    o.startup_timeout_ms = args->startup_timeout_ms;
    o.max_size = args->max_size;
    o.claim = args->claim == "exact" ? kvaudit::conform::PartitionClaim::Exact : kvaudit::conform::PartitionClaim::Heuristic;
    o.precision = kvaudit::paging::parse_precision(args->precision, "--precision");
    o.page_choices = page_choices(*args);
    if (o.page_choices && o.method != kvaudit::conform::ConformMethod::PageEntroKV)
      throw kvaudit::InputError("--preset", "preset", "--preset and --page-knob apply to --method page-entrokv only");
    if (!args->replay.empty()) o.replay = read_lines(args->replay);
    if (args->replay_strict && args->replay.empty()) throw kvaudit::InputError("--replay-strict", "flag", "needs --replay FILE");
    o.replay_strict = args->replay_strict;
    o.progress = [](const std::string& s) { std::cerr << "kvaudit conform: " << s << "\n"; };
    install_interrupt_handlers();
    auto result = kvaudit::conform::run_conform(o);
    const auto& j = result.report;
    if (!args->report.empty()) kvaudit::io::write_file_atomically(args->report, j.dump(2) + "\n");
    // Human summary on stderr; the JSON object alone on stdout.
    std::cerr << "kvaudit conform: " << j["cases"]["judged"] << " cases judged in " << j["seconds"] << " s ("
              << j["cases_per_second"] << " cases/s); verdict " << j["verdict"].get<std::string>() << "\n";
    if (j.contains("counterexample")) {
      const auto& c = j["counterexample"];
      std::string size = c.contains("n") ? "n=" + c["n"].dump() + ", groups " + c["groups"].dump()
                                         : c["heads"].dump() + " heads x T=" + c["tokens"].dump();
      std::cerr << "kvaudit conform: minimal counterexample (" << size << "), rule " << c["rule"] << ": " << c["message"].get<std::string>() << "\n"
                << "request:    " << c["request_line"].get<std::string>() << "\n"
                << "answer:     " << c["answer"].dump() << "\n"
                << "admissible: " << c["admissible_answer"].dump() << "\n";
    }
    if (j.contains("gap")) {
      const auto& g = j["gap"];
      std::cerr << "kvaudit conform: gap to the optimum over " << g["cases"] << " answers: " << g["certified_suboptimal"]
                << " certified suboptimal; lower ends " << g["lower_bits"].dump() << ", upper ends "
                << g["upper_bits"].dump() << " bits\n";
      if (g.contains("worst") && g["worst"].contains("shrunk"))
        std::cerr << "smallest suboptimal case: " << g["worst"]["shrunk"]["request_line"].get<std::string>() << "\n";
    }
    if (j.contains("protocol_error")) {
      const auto& p = j["protocol_error"];
      std::cerr << "kvaudit conform: protocol error (" << p["kind"].get<std::string>()
                << "): " << p["message"].get<std::string>() << "\n"
                << "request:    " << p["request_line"].get<std::string>() << "\n";
    }
    std::cout << j.dump() << "\n";
    kvaudit::cli::exit_code() = result.exit_code;
  });
});

}  // namespace
