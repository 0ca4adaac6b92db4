# Helpers so that adding a source file or a test is dropping a file into the right folder.

# Precompiled headers: most files parse nlohmann/json, Boost.Multiprecision, GoogleTest or RapidCheck, and CI compiles
# everything twice on 2 cores. With them precompiled, the gcc build took 568 s instead of 680 (1,133 CPU-s instead of
# 1,358). Only third-party and standard headers go in, so editing a project header never rebuilds one. Off: each file
# compiles from its own includes alone, which checks that it includes what it uses.
option(KVAUDIT_PCH "Precompile the big third-party headers once per target" ON)
set(KVAUDIT_PCH_STD <algorithm> <cmath> <cstdint> <map> <memory> <optional> <set> <stdexcept> <string> <vector>)
set(KVAUDIT_PCH_JSON <nlohmann/json.hpp>)
set(KVAUDIT_PCH_MULTIPRECISION <boost/multiprecision/cpp_int.hpp> <boost/multiprecision/gmp.hpp>)

# kvaudit_precompile(TARGET HEADER...): TARGET's files are compiled with HEADER... precompiled (KVAUDIT_PCH).
function(kvaudit_precompile target)
  if(KVAUDIT_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# kvaudit_library(NAME DIR [LINK ...]): every .cpp directly under DIR and its subfolders listed in SUBDIRS.
function(kvaudit_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()

# Exit status of a test executable that skipped tests and failed none (tests/support/gtest_skip_exit.h).
set(KVAUDIT_SKIP_EXIT 77)

# kvaudit_test(SOURCE LABEL [LINK ...]): one test executable per file, named after it, discovered by CTest.
# Its main() (tests/support/gtest_skip_main.cpp) exits KVAUDIT_SKIP_EXIT when a test called GTEST_SKIP() and
# none failed, so CTest reports it Skipped, never Passed; a failure still reports Failed.
# tests/meta/check_skip_reporting.py (CTest: skip_reporting_meta_test) fails if any gtest executable lacks this.
function(kvaudit_test source label)
  get_filename_component(name ${source} NAME_WE)
  if(NOT TARGET kvaudit_gtest_skip_main)
    add_library(kvaudit_gtest_skip_main STATIC ${PROJECT_SOURCE_DIR}/tests/support/gtest_skip_main.cpp)
    target_include_directories(kvaudit_gtest_skip_main PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(kvaudit_gtest_skip_main PUBLIC GTest::gtest)
    # Every test executable has the same compile flags (-fopenmp from kvaudit_core, GoogleTest's defines), so all
    # reuse one precompiled header, compiled here once.
    add_library(kvaudit_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)
    target_link_libraries(kvaudit_test_pch PRIVATE kvaudit_core rapidcheck GTest::gtest)
    kvaudit_precompile(kvaudit_test_pch ${KVAUDIT_PCH_STD} ${KVAUDIT_PCH_JSON} ${KVAUDIT_PCH_MULTIPRECISION}
                       <gtest/gtest.h> <rapidcheck.h> <rapidcheck/gtest.h>)
  endif()
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARGN} rapidcheck GTest::gtest kvaudit_gtest_skip_main)
  if(TARGET rapidcheck_gtest)
    target_link_libraries(${name} PRIVATE rapidcheck_gtest)
  endif()
  if(KVAUDIT_PCH)
    target_precompile_headers(${name} REUSE_FROM kvaudit_test_pch)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS ${label} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                       SKIP_RETURN_CODE ${KVAUDIT_SKIP_EXIT}
                       ENVIRONMENT "KVAUDIT_BIN=$<TARGET_FILE:kvaudit>;KVAUDIT_ROOT=${PROJECT_SOURCE_DIR}")
endfunction()
