// run_conform: option checks, then the one driver (driver.hpp) over the family the method names.
#include "audit/conform/conform_run.h"

#include "audit/conform/chunk_family.h"
#include "audit/conform/driver.hpp"
#include "audit/conform/page_family.h"
#include "audit/conform/partition_family.h"
#include "core/error.h"

namespace kvaudit::conform {

const char* conform_method_name(ConformMethod m) {
  switch (m) {
    case ConformMethod::ChunkKV: return "chunkkv";
    case ConformMethod::EgChunkKV: return "eg-chunkkv";
    case ConformMethod::PageEntroKV: return "page-entrokv";
    case ConformMethod::Partition: return "partition";
  }
  return "?";
}

ConformMethod parse_conform_method(const std::string& text, const std::string& source) {
  for (ConformMethod m : {ConformMethod::ChunkKV, ConformMethod::EgChunkKV, ConformMethod::PageEntroKV,
                          ConformMethod::Partition}) {
    if (text == conform_method_name(m)) return m;
  }
  throw InputError(source, "method", "expected chunkkv, eg-chunkkv, page-entrokv or partition, got '" + text + "'");
}

ConformResult run_conform(const ConformOptions& o) {
  if (o.impl.empty()) throw InputError("--impl", "command", "empty");
  if (o.cases < 0) throw InputError("--cases", "count", "must be >= 0");
  if (o.timeout_ms < 1) throw InputError("--timeout-ms", "milliseconds", "must be >= 1");
  if (o.startup_timeout_ms < 1) throw InputError("--startup-timeout-ms", "milliseconds", "must be >= 1");
  if (o.max_size < 0) throw InputError("--max-size", "N", "must be >= 1");
  switch (o.method) {
    case ConformMethod::ChunkKV:
      return drive(ChunkFamily(Method::ChunkKV, o.flavour, o.max_size, o.replay_strict), o);
    case ConformMethod::EgChunkKV:
      return drive(ChunkFamily(Method::EgChunkKV, o.flavour, o.max_size, o.replay_strict), o);
    case ConformMethod::PageEntroKV:
      return drive(PageFamily(o.max_size, o.precision, o.page_choices, o.replay_strict), o);
    case ConformMethod::Partition:
      return drive(PartitionFamily(o.max_size, o.claim), o);
  }
  throw InputError("--method", "method", "unknown");
}

}  // namespace kvaudit::conform
