// The audit's stages in report order. A stage needing real dumps runs per model or per prompt (audit_runner.h).
#include "audit/audit_runner.h"
#include "audit/budget_match.h"
#include "audit/dump_conformance.h"
#include "audit/needle_study.h"
#include "audit/page_foreign.h"
#include "audit/paging_findings.h"
#include "audit/pooling_findings.h"
#include "audit/retained_entropy.h"
#include "audit/suite_summary.h"

namespace kvaudit::audit {

const std::vector<StageInfo>& audit_stages() {
  static const std::vector<StageInfo> stages = {
      {"budget-match", "Budget match: ChunkKV vs EG-ChunkKV, float vs exact budget", Scope::Global, budget_match_section},
      {"dump-conformance", "Recorded kvpress selections on real dumps vs the oracle", Scope::PerModel, dump_conformance_section},
      {"retained-entropy", "Retained-token coherence (seed 000) and benchmark claims", Scope::Global, retained_entropy_section},
      {"pooling", "Entropy-budgeted contiguous pooling", Scope::Global, pooling_section, true},
      {"paging", "Page-EntroKV under GQA", Scope::PerModel, paging_section},
      {"page-foreign", "The authors' Page-EntroKV pooler: recorded selections vs the oracle", Scope::PerModel, page_foreign_section},
      {"page-paper-code", "Page-EntroKV: the authors' paper against their released code", Scope::Global, page_paper_code_section},
      {"needle-study", "Needle retrieval through kvpress's pipeline", Scope::Global, needle_study_section},
      {"suites", "Property suites and proof checks", Scope::Global, suite_summary_section, true},
  };
  return stages;
}

}  // namespace kvaudit::audit
