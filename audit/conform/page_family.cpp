// Page-EntroKV conform family: the family's judge, a translator around the one page checker.
#include "audit/conform/page_family.h"

#include <stdexcept>

#include "audit/page_check.h"

namespace kvaudit::conform {

Verdict judge_pages(const PageCase& c, const PageAnswer& a, const paging::PrecisionModel& precision) {
  audit::PageClaim claim{a.kept_pages, std::nullopt};
  if (a.kept_tokens) claim.kept_tokens = std::vector<Positions>(a.kept_tokens->begin(), a.kept_tokens->end());
  return audit::check_page_claim(c.tensor(), 0, c.params, claim, precision).verdict;
}

std::vector<std::vector<Index>> canonical_pages(const PageCase& c) { return audit::canonical_page_selection(c.tensor(), 0, c.params); }

Judgement PageFamily::judge(const Case& c, const std::string& response, std::int64_t id) const {
  Judgement j;
  PageAnswer a = decode_page_response(response, id);
  j.answer = {{"kept_pages", a.kept_pages}};
  if (a.kept_tokens) j.answer["kept_tokens"] = *a.kept_tokens;
  try {
    j.verdict = judge_pages(c, a, precision_);
  } catch (const std::invalid_argument& e) {
    j.invalid_case = true;
    j.verdict = Verdict::not_run(std::string("oracle rejects the case: ") + e.what());
  }
  return j;
}

nlohmann::json PageFamily::summary(const Case& c) const {
  return {{"heads", c.q_heads}, {"tokens", c.tokens}, {"group_size", c.params.group_size},
          {"page_size", c.params.page_size}, {"origin", c.origin}};
}

nlohmann::json PageFamily::canonical(const Case& c) const { return {{"kept_pages", canonical_pages(c)}}; }

nlohmann::json PageFamily::report_fields() const {
  nlohmann::json j = {{"precision", paging::to_string(precision_)}};
  if (choices_) {
    const PageParams fixed = paging::apply_page_choices(*choices_, PageParams{}, "--page-knob");
    j["fixed_knobs"] = {{"preset", choices_->preset.empty() ? "none" : choices_->preset}, {"knobs", audit::page_knobs_json(fixed)}};
  }
  return j;
}

rc::Gen<PageCase> PageFamily::generator() const {
  if (!choices_) return page_cases(max_size_);
  return rc::gen::map(page_cases(max_size_), [choices = *choices_](PageCase c) {
    c.params = paging::apply_page_choices(choices, c.params, "--page-knob");
    return c;
  });
}

std::vector<PageCase> PageFamily::dump_cases(const std::string& dir) const {
  std::vector<PageCase> out = page_dump_cases(dir, max_size_);
  if (choices_)
    for (auto& c : out) c.params = paging::apply_page_choices(*choices_, c.params, "--page-knob");
  return out;
}

}  // namespace kvaudit::conform
