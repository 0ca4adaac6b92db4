// The exit status of a test executable whose run skipped tests and failed none (tests/support/gtest_skip_main.cpp);
// cmake/kvaudit_targets.cmake registers it as SKIP_RETURN_CODE (KVAUDIT_SKIP_EXIT there: keep the two equal).
#pragma once

namespace kvaudit_test_support {
constexpr int kSkipExit = 77;  // automake's "skipped" status
}
