// `kvaudit audit` (the main job) and `kvaudit merge` (combine shard reports): write report.{json,md,html}.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>

#include "audit/audit_runner.h"
#include "cli/command_registry.h"
#include "core/error.h"
#include "core/io/atomic_file.h"
#include "reports/render.h"
#include "reports/report_schema.h"

namespace {

namespace fs = std::filesystem;

// Renders all three files first, then renames each into place: a failure leaves no partial report.
void write_report(const nlohmann::json& report, const std::string& out_dir) {
  kvaudit::reports::validate_report(report);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw kvaudit::InputError(out_dir, "--out", "cannot create directory: " + ec.message());
  const std::string json_text = kvaudit::reports::render_json(report);
  const std::string md_text = kvaudit::reports::render_markdown(report);
  const std::string html_text = kvaudit::reports::render_html(report);
  kvaudit::io::write_file_atomically(out_dir + "/report.json", json_text);
  kvaudit::io::write_file_atomically(out_dir + "/report.md", md_text);
  kvaudit::io::write_file_atomically(out_dir + "/report.html", html_text);
}

struct AuditArgs {
  std::string data = "data";
  std::string out = "out";
  std::uint64_t seed = 1;
  std::string shard = "0/1";
  int jobs = 0;
  bool quick = false;
  bool exhaustive = false;
  bool quiet = false;
  bool fail_on_findings = false;
};

const bool registered_audit = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<AuditArgs>();
  auto* cmd = root.add_subcommand("audit", "Run every CPU suite on the real dumps and write report.json, report.md, report.html");
  cmd->add_option("--data", args->data, "directory holding manifest.json and the dumps")->capture_default_str();
  cmd->add_option("--out", args->out, "directory for the report files")->capture_default_str();
  cmd->add_option("--seed", args->seed, "seed of every generated case")->capture_default_str();
  cmd->add_option("--shard", args->shard, "run the deterministic slice i/N of the units (merge with `kvaudit merge`)")->capture_default_str();
  cmd->add_option("-j,--jobs", args->jobs, "units run at once (default 0: every core); the report is the same for any count")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quick", args->quick, "smaller grids and no suite runs (for tests)");
  cmd->add_flag("--exhaustive", args->exhaustive, "verify every layer, head and page size the dumps hold (no sampling; hours on a laptop)")
      ->excludes("--quick");
  cmd->add_flag("--quiet", args->quiet, "no progress lines on stderr");
  cmd->add_flag("--fail-on-findings", args->fail_on_findings, "exit 1 when the report's verdict is not `conforms`");
  cmd->callback([args, cmd] {
    std::smatch m;
    static const std::regex shard_re("([0-9]{1,6})/([0-9]{1,6})");
    if (!std::regex_match(args->shard, m, shard_re)) throw kvaudit::InputError("--shard", "shard", "expected i/N, got '" + args->shard + "'");
    kvaudit::audit::AuditOptions options;
    options.data_dir = args->data;
    // Hardening (docs/hardening.md): a --data directory the user names explicitly must load; otherwise a CI
    // gate would pass on a report whose dump sections are merely "not run". The default directory stays
    // optional (the audit records why the dump sections did not run).
    options.require_data = cmd->count("--data") > 0;
    options.seed = args->seed;
    options.quick = args->quick;
    options.exhaustive = args->exhaustive;
    options.jobs = args->jobs;
    options.shard_index = std::stoi(m[1]);
    options.shard_count = std::stoi(m[2]);
    if (!args->quiet) options.progress = [](const std::string& line) { std::cerr << line << "\n"; };
    nlohmann::json report = kvaudit::audit::run_audit(options);
    write_report(report, args->out);
    std::cout << nlohmann::json{{"verdict", report["verdict"]}, {"totals", report["totals"]}, {"out", args->out}}.dump() << "\n";
    if (args->fail_on_findings && report["verdict"] != "conforms") kvaudit::cli::exit_code() = 1;
  });
});

struct MergeArgs {
  std::vector<std::string> inputs;
  std::string out = "out";
};

const bool registered_merge = kvaudit::cli::register_command([](CLI::App& root) {
  auto args = std::make_shared<MergeArgs>();
  auto* cmd = root.add_subcommand("merge", "Combine the report.json files of `kvaudit audit --shard i/N` runs into one report");
  cmd->add_option("reports", args->inputs, "shard report.json files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "directory for the merged report files")->capture_default_str();
  cmd->callback([args] {
    std::vector<nlohmann::json> shards;
    for (const auto& path : args->inputs) {
      std::ifstream in(path);
      nlohmann::json r = nlohmann::json::parse(in, nullptr, false);
      if (r.is_discarded()) throw kvaudit::InputError(path, "json", "not valid JSON");
      try {
        kvaudit::reports::validate_report(r);
      } catch (const std::invalid_argument& e) {
        throw kvaudit::InputError(path, "report", e.what());
      }
      shards.push_back(std::move(r));
    }
    nlohmann::json merged;
    try {
      merged = kvaudit::audit::merge_reports(shards);
    } catch (const std::invalid_argument& e) {
      throw kvaudit::InputError(args->inputs.front(), "merge", e.what());
    }
    write_report(merged, args->out);
    std::cout << nlohmann::json{{"verdict", merged["verdict"]}, {"totals", merged["totals"]}, {"out", args->out}}.dump() << "\n";
  });
});

}  // namespace
