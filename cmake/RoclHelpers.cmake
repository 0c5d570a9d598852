# Helpers that keep each folder's CMakeLists.txt a few lines long.

# rocl_sources(file...): adds files of the calling folder to the rocl library.
function(rocl_sources)
  foreach(f IN LISTS ARGN)
    target_sources(rocl_objects PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/${f})
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
  target_link_libraries(${T_NAME} PRIVATE rocl_internal GTest::gtest GTest::gtest_main ${T_LIBS})
  target_include_directories(${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  gtest_discover_tests(
    ${T_NAME} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT})
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

# rocl_library_properties(target): what rocl's libraries (librocl,
# librocl_mpi) share, built shared or static.
function(rocl_library_properties target)
  set_target_properties(${target} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION 0)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    return()
  endif()
  # A shared library keeps the calls of a static one direct: its own
  # functions are not interposable, so GCC calls them directly and inlines
  # across files instead of going through the PLT.
  target_compile_options(${target} PRIVATE -fno-semantic-interposition)
  # Its thread-locals (the send and receive paths read several per message)
  # are reached through TLS descriptors: a short call that returns the
  # offset in the thread's static TLS block, where a program linked with the
  # library has them, instead of a __tls_get_addr call per access; unlike
  # the initial-exec model this still works when the library is dlopen()ed
  # late (their block is then allocated on demand). Linked into a program,
  # they become plain %fs-relative accesses as before.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    target_compile_options(${target} PRIVATE -mtls-dialect=gnu2)
  endif()
  # A static library keeps fat LTO objects, so that programs linked without
  # LTO still link (a shared one is optimised whole when it is linked).
  if(NOT ROCL_SHARED
     AND CMAKE_INTERPROCEDURAL_OPTIMIZATION_RELEASE
     AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-ffat-lto-objects>)
  endif()
endfunction()

# rocl_install_tool(target...): installs user programs into bin/. Built
# shared, their RPATH finds the libraries relative to the program
# ($ORIGIN/../lib), so an installed tree still works once moved (DESTDIR,
# cpack); in the build tree CMake's build RPATH does the same.
function(rocl_install_tool)
  file(RELATIVE_PATH bin_to_lib ${CMAKE_INSTALL_FULL_BINDIR} ${CMAKE_INSTALL_FULL_LIBDIR})
  foreach(target IN LISTS ARGN)
    if(ROCL_SHARED)
      set_target_properties(${target} PROPERTIES INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
    endif()
    install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endforeach()
endfunction()
