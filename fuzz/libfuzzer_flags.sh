# libFuzzer flags every run of a harness shares (fuzz/run_short.sh for `ctest -L fuzz`, scripts/fuzz-campaign.sh);
# sourced, so the two cannot drift apart. Per run they add the corpus, the time budget, the artifact dir and a dict.
#
# -entropic_feature_frequency_threshold=0: the entropic schedule keeps its 100 rarest features (its
# -entropic_number_of_rarest_features default) instead of every feature seen fewer than 255 times. With ~20k
# features most stay under 255, and UpdateFeatureFrequency scanned that whole list on each hit of each feature:
# 39 % of a corpus replay and 57 % of a campaign's samples (docs/hardening.md, "Fuzzing").
libfuzzer_flags=(-timeout=5 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
                 -entropic_feature_frequency_threshold=0)
