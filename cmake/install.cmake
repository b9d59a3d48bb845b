# `cmake --install` rules and the relocatable CMake package: find_package(dualcast 0.1) for consumers.
#
# What a consumer gets (no other flags needed):
#   dualcast::dualcast  the runtime: libdualcast.so (dualcast_runtime and
#                       dualcast_jit linked in whole), the public headers, and
#                       Abseil + Threads as usage requirements.
#   dualcast::dual      the header-only Dual<T, N> library alone (needs nothing).
#
# Why a shared library for the install while the build tree keeps static ones:
# the JIT links LLVM 19 (libLLVM.so), OpenBLAS and, when found, NVRTC. A static
# runtime would push all of them onto every consumer's link line and make the
# package call find_dependency(LLVM 19.1 CONFIG), which requires llvm-19-dev
# (650 MB) on the consumer's machine and ties consumers to one exact LLVM
# major.minor (loading LLVM's package itself is cheap: ~0.1 s). libdualcast.so
# links those privately (found at run time through its RUNPATH), so consumers
# only ever see our headers, Abseil and pthreads. It also guarantees ONE copy
# of the process-wide state (kernel cache, ORC JIT, thread pool) per process.
# Abseil stays public: the tracer's IR header uses absl::flat_hash_map.
# NVRTC and the CUDA driver are dlopen'ed at run time, so libdualcast.so
# needs no CUDA library to load (ctest libdualcast_needs_no_cuda checks
# `readelf -d`).
#
# Headers: only dualcast/ is installed. dual/ headers and the runtime's public
# headers (dualcast::Error included: dualcast/error.hpp) go to
# <prefix>/include/dualcast/; the tracer headers the public ones include
# (kernel() traces lambdas in the consumer's code) go to
# <prefix>/include/dualcast/trace/, with `#include "jit/..."` rewritten to
# `#include "dualcast/trace/..."` (cmake/install_headers.cmake computes the
# include closure at install time). Internal headers are not installed.
#
# Example:
#   cmake --build build && cmake --install build --prefix /opt/dualcast
#   # consumer CMakeLists.txt:
#   find_package(dualcast 0.1 REQUIRED)      # CMAKE_PREFIX_PATH=/opt/dualcast
#   target_link_libraries(app PRIVATE dualcast::dualcast)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DUALCAST_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/dualcast)

# ---- libdualcast.so: the static runtime and JIT archives, whole ----
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/dualcast_shared.cc CONTENT
  "// libdualcast.so: all code comes from the dualcast_runtime and dualcast_jit archives.\n")
add_library(dualcast_shared SHARED ${PROJECT_BINARY_DIR}/dualcast_shared.cc)
target_link_libraries(dualcast_shared PRIVATE dualcast_runtime)
# Every object of both archives, not only those the empty source pulls in.
set_target_properties(dualcast_shared PROPERTIES
  OUTPUT_NAME dualcast
  EXPORT_NAME dualcast
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  LINK_LIBRARY_OVERRIDE_dualcast_runtime WHOLE_ARCHIVE
  LINK_LIBRARY_OVERRIDE_dualcast_jit WHOLE_ARCHIVE
  # LLVM, OpenBLAS, NVRTC live outside the system dirs on some machines.
  INSTALL_RPATH_USE_LINK_PATH ON)
# Calls between the library's own functions bind inside it at link time, not
# through the PLT (the archives are built -fPIC, so every call to a function
# with default visibility was an indirect jump a user could interpose). Only
# functions: data, template statics and thread_locals included, stay unique
# process-wide. Measured: a one-element tape step (broadcast + sum +
# gradient) through libdualcast.so 6.7-7.0 -> 6.2-6.4 us.
target_link_options(dualcast_shared PRIVATE -Wl,-Bsymbolic-functions)
target_include_directories(dualcast_shared INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(dualcast_shared INTERFACE cxx_std_20)
target_link_libraries(dualcast_shared INTERFACE
  dualcast_dual absl::flat_hash_map absl::status absl::statusor absl::strings
  absl::str_format absl::synchronization absl::hash Threads::Threads)

set_target_properties(dualcast_dual PROPERTIES EXPORT_NAME dual)

# ---- files ----
install(DIRECTORY ${PROJECT_SOURCE_DIR}/dual/include/dualcast
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dualcast_dual
  FILES_MATCHING PATTERN "*.hpp")
# The runtime's public headers and the tracer headers they include (the closure, at install time).
install(CODE "
  set(DUALCAST_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(DUALCAST_INCLUDE_DIR \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}\")
  include(\"${CMAKE_CURRENT_LIST_DIR}/install_headers.cmake\")
  " COMPONENT dualcast_runtime)

install(TARGETS dualcast_dual EXPORT dualcastDualTargets)
install(TARGETS dualcast_shared EXPORT dualcastTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dualcast_runtime)
install(EXPORT dualcastDualTargets NAMESPACE dualcast::
  DESTINATION ${DUALCAST_INSTALL_CMAKEDIR} COMPONENT dualcast_dual)
install(EXPORT dualcastTargets NAMESPACE dualcast::
  DESTINATION ${DUALCAST_INSTALL_CMAKEDIR} COMPONENT dualcast_runtime)

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/dualcastConfig.cmake.in
  ${PROJECT_BINARY_DIR}/dualcastConfig.cmake
  INSTALL_DESTINATION ${DUALCAST_INSTALL_CMAKEDIR})
# 0.x: a minor release may change the API, so 0.1 accepts 0.1.* only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dualcastConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dualcastConfig.cmake
  ${PROJECT_BINARY_DIR}/dualcastConfigVersion.cmake
  DESTINATION ${DUALCAST_INSTALL_CMAKEDIR} COMPONENT dualcast_dual)
