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

}  // namespace kvaudit::conform
