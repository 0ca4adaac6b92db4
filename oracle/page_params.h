// The Page-EntroKV parameters (PageParams, declared once in core/types.h) under the oracle's names, and their
// text forms. Defaults are documented in docs/page-entrokv.md.
#pragma once

#include "core/types.h"

namespace kvaudit::oracle::paging {

using Pooling = kvaudit::PagePooling;
using kvaudit::BudgetUnit;
using kvaudit::EntropySource;
using kvaudit::GreedyRule;
using kvaudit::PageCountRule;
using kvaudit::PageParams;
using kvaudit::PageScore;
using kvaudit::PoolSource;
using kvaudit::SinkPages;

const char* to_string(Pooling p);
const char* to_string(PoolSource p);
const char* to_string(PageScore p);
const char* to_string(SinkPages p);
const char* to_string(GreedyRule p);
const char* to_string(EntropySource p);
const char* to_string(BudgetUnit p);
const char* to_string(PageCountRule p);

}  // namespace kvaudit::oracle::paging
