# Helpers so that adding a source file or a test is dropping a file into the right folder.

# kvaudit_library(NAME DIR [LINK ...]): every .cpp directly under DIR and its subfolders listed in SUBDIRS.
function(kvaudit_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()

# kvaudit_test(SOURCE LABEL [LINK ...]): one test executable per file, named after it, discovered by CTest.
function(kvaudit_test source label)
  get_filename_component(name ${source} NAME_WE)
  add_executable(${name} ${source})
  target_link_libraries(${name} PRIVATE ${ARGN} rapidcheck GTest::gtest GTest::gtest_main)
  if(TARGET rapidcheck_gtest)
    target_link_libraries(${name} PRIVATE rapidcheck_gtest)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS ${label} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                       ENVIRONMENT "KVAUDIT_BIN=$<TARGET_FILE:kvaudit>;KVAUDIT_ROOT=${PROJECT_SOURCE_DIR}")
endfunction()
