// main() of every kvaudit test executable: gtest's, except that a run in which nothing failed but some test
// called GTEST_SKIP() exits kSkipExit, which kvaudit_test() registers as the test's SKIP_RETURN_CODE. So CTest
// reports such a run "Skipped", never "Passed", and a failure is never masked: the rejected alternative,
// SKIP_REGULAR_EXPRESSION "\[  SKIPPED \]", makes CTest report a run that printed it *and failed* as Skipped.
#include <cstdio>

#include <gtest/gtest.h>

#include "tests/support/gtest_skip_exit.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const auto* unit = testing::UnitTest::GetInstance();
  if (rc == 0 && unit->skipped_test_count() > 0) {
    std::printf("kvaudit_gtest_main: %d test(s) SKIPPED, %d passed: exit %d so CTest reports Skipped\n",
                unit->skipped_test_count(), unit->successful_test_count(), kvaudit_test_support::kSkipExit);
    return kvaudit_test_support::kSkipExit;
  }
  return rc;
}
