# Helpers that keep each folder's CMakeLists.txt a few lines long.

# rocl_sources(file...): adds files of the calling folder to the rocl library.
function(rocl_sources)
  foreach(f IN LISTS ARGN)
    target_sources(rocl PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/${f})
  endforeach()
endfunction()

# rocl_test(NAME n SOURCES s... [LABELS l...] [LIBS lib...]): a GoogleTest
# executable linked with rocl, registered with ctest test by test.
# Label "unit" unless told otherwise.
function(rocl_test)
  if(NOT ROCL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE rocl GTest::gtest GTest::gtest_main ${T_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  gtest_discover_tests(${T_NAME} DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
endfunction()

# rocl_apply_sanitizer(kind): global flags for a sanitizer build.
function(rocl_apply_sanitizer kind)
  if(kind STREQUAL "address")
    set(f "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
  elseif(kind STREQUAL "thread")
    set(f "-fsanitize=thread -fno-omit-frame-pointer")
  elseif(kind STREQUAL "")
    return()
  else()
    message(FATAL_ERROR "ROCL_SANITIZE must be address or thread, not '${kind}'")
  endif()
  set(CMAKE_C_FLAGS "${CMAKE_C_FLAGS} ${f}" PARENT_SCOPE)
  set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${f}" PARENT_SCOPE)
  set(CMAKE_EXE_LINKER_FLAGS "${CMAKE_EXE_LINKER_FLAGS} ${f}" PARENT_SCOPE)
  set(CMAKE_SHARED_LINKER_FLAGS "${CMAKE_SHARED_LINKER_FLAGS} ${f}" PARENT_SCOPE)
endfunction()
