// `kvaudit check-pages`: is a claimed Page-EntroKV selection (kept pages per KV group of one layer) one the
// specification produces, under the precision the implementation computes in? The one page checker
// (audit/page_check.h), as kvaudit.check_pages and conform ask it. Exit 0 admissible, 1 not, 3 inconclusive.
#include <iostream>

#include "api/page_answers.h"
#include "cli/command_registry.h"
#include "cli/json_file.h"
#include "cli/paging_input.h"

namespace {

using kvaudit::Index;
using kvaudit::InputError;

struct CheckPagesArgs {
  kvaudit::cli::AttnSource input;
  kvaudit::paging::PageOptions options;
  std::string claim, precision = "float32";
};

std::vector<std::vector<Index>> lists(const nlohmann::json& v, const std::string& path, const std::string& field) {
  if (!v.is_array()) throw InputError(path, field, "must be an array with one array of integers per KV group, got " + v.dump());
  std::vector<std::vector<Index>> out;
  for (const auto& g : v) {
    if (!g.is_array()) throw InputError(path, field, "every group's entry must be an array of integers, got " + g.dump());
    out.emplace_back();
    for (const auto& x : g) {
      if (!x.is_number_integer() || (x.is_number_unsigned() && x.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
        throw InputError(path, field, "every entry must be an integer, got " + x.dump());
      out.back().push_back(x.get<Index>());
    }
  }
  return out;
}

// {"kept_pages": [[...], ...]} with optional "kept_tokens": [[...], ...]. Order and range are judged, not rejected.
kvaudit::audit::PageClaim read_claim(const std::string& path) {
  const nlohmann::json j = kvaudit::cli::read_json_object(path, "\"kept_pages\"");
  if (!j.contains("kept_pages")) throw InputError(path, "kept_pages", "missing");
  kvaudit::audit::PageClaim c{lists(j["kept_pages"], path, "kept_pages"), std::nullopt};
  if (j.contains("kept_tokens") && !j["kept_tokens"].is_null()) c.kept_tokens = lists(j["kept_tokens"], path, "kept_tokens");
  return c;
}

const bool registered = kvaudit::cli::register_command([](CLI::App& root) {
  auto a = std::make_shared<CheckPagesArgs>();
  auto* cmd = root.add_subcommand("check-pages",
                                  "Decide whether a claimed Page-EntroKV selection is admissible (exit 0 admissible, 1 not, 3 inconclusive)");
  kvaudit::cli::add_attn_options(cmd, a->input);
  kvaudit::cli::add_page_options(cmd, a->options);
  cmd->add_option("--claim", a->claim, "JSON file: {\"kept_pages\": [[pages of group 0], ...]} (optional \"kept_tokens\")")->required();
  cmd->add_option("--precision", a->precision,
                  "what the implementation computes page scores in: float32 | float64 | exact | a relative tolerance")
      ->capture_default_str();
  cmd->callback([a] {
    using namespace kvaudit;
    const PageParams p = paging::parse_page_options(a->options);
    const paging::PrecisionModel precision = paging::parse_precision(a->precision, "--precision");
    const audit::PageClaim claim = read_claim(a->claim);
    api::Float32Input input;
    const ScoreTensor attn = cli::load_attention(a->input, input);
    const api::Answer answer = api::check_pages_answer(attn, p, claim, precision, input);
    std::cout << answer.body.dump() << "\n";
    cli::exit_code() = api::exit_code(answer.verdict);
  });
});

}  // namespace
