// The text forms of the Page-EntroKV parameters (PageParams and its enums, declared once in core/types.h).
// Defaults are documented in docs/page-entrokv.md.
#pragma once

#include "core/types.h"

namespace kvaudit::oracle::paging {

const char* to_string(PagePooling p);
const char* to_string(PoolSource p);
const char* to_string(PageScore p);
const char* to_string(SinkPages p);
const char* to_string(GreedyRule p);
const char* to_string(EntropySource p);
const char* to_string(BudgetUnit p);
const char* to_string(PageCountRule p);

}  // namespace kvaudit::oracle::paging
