# cpack -G DEB (in the build folder): one Debian package, rocl, of what
# `cmake --install` installs, under /usr. Its dependencies are computed
# from the binaries by dpkg-shlibdeps (dpkg-dev).
set(CPACK_PACKAGE_NAME rocl)
set(CPACK_PACKAGE_VENDOR "rocl")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Resource oriented communication library")
set(CPACK_PACKAGE_DESCRIPTION
    "rocl lets the threads and processes of a distributed program exchange messages \
directly (in-process, shared memory, TCP). The package holds librocl, its MPI layer \
(librocl_mpi, mpi.h under /usr/include/rocl/mpi, rocl-mpicc, rocl-mpicxx), the tools \
roclrun, rocld, rocl-dir and rocl-info, the headers, pkg-config files and a CMake package.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "rocl maintainers <maintainers@users.noreply.a-seed-22d9a805.example>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file and an ldconfig trigger for librocl and librocl_mpi.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# rocl-mpicc and the headers want a compiler; pkg-config reads rocl.pc.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "g++, pkg-config")
include(CPack)
