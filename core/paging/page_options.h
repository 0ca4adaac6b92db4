// Page-EntroKV options as every front end receives them (flags, Python keywords, conform's JSON fields), parsed
// into PageParams in one place.
#pragma once

#include <string>

#include "core/types.h"

namespace kvaudit::paging {

struct PageOptions {
  long long group_size = 0, page_size = 16, sinks = 4;
  std::string ratio;  // rho as decimal text
  std::string pooling = "entropy", page_score = "sum", source = "sink-isolated", sink_pages = "reserved",
              greedy = "skip-misfits";
};

// Validates and parses every option. InputError(where, field, problem): `where` is `source` when given (a conform
// request), else the option's flag ("--group-size").
PageParams parse_page_options(const PageOptions& options, const std::string& source = "");

}  // namespace kvaudit::paging
