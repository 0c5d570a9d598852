# What `cmake --install` puts under the prefix: librocl, librocl_mpi and
# librocl_ncs, the headers (mpi.h under include/rocl/mpi, clear of other
# MPIs' mpi.h; ncs.h under include/rocl/ncs),
# the tools (each folder installs its own: rocl_install_tool), the
# rocl-mpicc/rocl-mpicxx wrappers (layers/mpi), the CMake package
# (find_package(rocl): rocl::rocl, rocl::mpi, rocl::ncs) and the
# pkg-config files (rocl, rocl-mpi, rocl-ncs).
include(CMakePackageConfigHelpers)
set(rocl_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/rocl)

set(rocl_libraries rocl rocl_mpi)
set(ROCL_HAVE_NCS OFF) # for roclConfig.cmake
if(TARGET rocl_ncs)
  set(ROCL_HAVE_NCS ON)
  list(APPEND rocl_libraries rocl_ncs)
  install(FILES layers/ncs/include/ncs.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rocl/ncs)
endif()
install(
  TARGETS ${rocl_libraries}
  EXPORT roclTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/rocl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES layers/mpi/include/mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rocl/mpi)

# The CMake package. A static librocl brings its private link dependency
# (OpenSSL's libcrypto) into the exported link interface, so the package
# config looks for it then.
install(EXPORT roclTargets NAMESPACE rocl:: DESTINATION ${rocl_cmake_dir})
configure_package_config_file(
  cmake/roclConfig.cmake.in ${PROJECT_BINARY_DIR}/roclConfig.cmake
  INSTALL_DESTINATION ${rocl_cmake_dir})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/roclConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(
  FILES ${PROJECT_BINARY_DIR}/roclConfig.cmake ${PROJECT_BINARY_DIR}/roclConfigVersion.cmake
  DESTINATION ${rocl_cmake_dir})

# The pkg-config files name the prefix they are installed under, which is
# known only when installing (cmake --install --prefix, cpack's /usr): each
# is configured twice, now for the rest and at install time for the prefix.
# A static librocl needs libcrypto, the C++ runtime and threads besides
# (pkg-config --static); a shared one names them itself.
if(ROCL_SHARED)
  set(ROCL_PC_PRIVATE "")
else()
  get_property(rocl_have_pmix GLOBAL PROPERTY ROCL_HAVE_PMIX)
  set(rocl_pc_requires "libcrypto")
  if(rocl_have_pmix)
    string(APPEND rocl_pc_requires " pmix")
  endif()
  set(ROCL_PC_PRIVATE
      "Requires.private: ${rocl_pc_requires}\nLibs.private: -lstdc++ -lm -pthread\n")
endif()
set(ROCL_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(ROCL_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(ROCL_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(rocl_pc_files rocl rocl-mpi)
if(TARGET rocl_ncs)
  list(APPEND rocl_pc_files rocl-ncs)
endif()
foreach(pc IN LISTS rocl_pc_files)
  set(pc_file ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc)
  configure_file(cmake/${pc}.pc.in ${pc_file}.in @ONLY)
  install(CODE "configure_file(\"${pc_file}.in\" \"${pc_file}\" @ONLY)")
  install(FILES ${pc_file} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
