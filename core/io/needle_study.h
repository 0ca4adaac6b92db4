// Needle-study records: <model folder>/needle_study/{study.json, records.jsonl}, written by
// tools/needle_study/needle_study.py (docs/needle-study.md). One record per haystack x mode x condition: what a
// real model answered through kvpress's pipeline after a press compressed its cache.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::io {

// One condition of the study: a press and its settings ("none" has no press).
struct NeedleCondition {
  std::string name;    // e.g. "eg_chunkkv_c10_r4_0.85"
  std::string method;  // none, snapkv, chunkkv, eg_chunkkv, page_entrokv
  double compression_ratio = 0;
  std::optional<Index> rescue_size{};  // eg_chunkkv: low_entropy_chunk_length
  std::string pooling{};             // page_entrokv: entropy or mean
  std::string preset{};              // page_entrokv: the selector preset, e.g. "released"; empty: kvaudit's default
};

// One generation: haystack `haystack` in `mode` under `condition`.
struct NeedleRun {
  Index haystack = 0;
  std::string mode;       // question-agnostic or question-aware
  std::string condition;  // a NeedleCondition name
  std::string value_kind;  // digits3, digits5, digits7, word
  Index value_tokens = 0;  // the value's length in the model's tokens
  std::optional<bool> retrieved{};  // empty iff the run raised `error`
  std::string error{};
  double tf_mean_logprob = 0;    // teacher-forced mean log-probability of the value's tokens
  std::vector<double> value_kept_per_layer{};  // fraction of the value's context tokens each layer kept
};

struct NeedleStudy {
  std::string folder;    // .../needle_study
  std::string model_id{};  // e.g. Qwen/Qwen2.5-Coder-0.5B-Instruct
  std::string gguf_sha256{};
  std::string protocol{};  // the study's own words on what kind of evidence it is
  Index planned_haystacks = 0, completed_haystacks = 0;
  std::string stopped{};   // why fewer than planned ran; empty when all ran
  std::vector<std::string> modes{};
  std::vector<NeedleCondition> conditions{};
  std::vector<NeedleRun> runs{};  // haystack-major, as recorded: every completed haystack x mode x condition once
};

// Loads and validates a study folder. Throws InputError naming the file, the line and the field (with the
// offending value) on a wrong type, an unknown mode or condition, a run recorded twice or missing, a run of an
// uncompleted haystack, or a study that did not finish (`status` other than "complete").
NeedleStudy load_needle_study(const std::string& folder);

// The study folders under a data tree: `data_dir/needle_study` and `data_dir/<model>/needle_study` that hold a
// study.json, in path order.
std::vector<std::string> find_needle_studies(const std::string& data_dir);

}  // namespace kvaudit::io
