# ctest driver (cmake -P): install this build into a fresh prefix, then configure, build and run two consumer projects against it.
#
# Proves the package works from the install tree alone: the consumers get
# no include paths, libraries or definitions other than what
# find_package(dualcast 0.1) gives them. Variables (all required, passed by
# tests/CMakeLists.txt): BUILD_DIR, SOURCE_DIR (tests/install), WORK_DIR,
# GENERATOR, CXX; optional: LAUNCHER (compiler launcher, e.g. ccache),
# SANITIZE (DUALCAST_SANITIZE of the build: the consumer must use it too).
#
# Example:
#   cmake -DBUILD_DIR=build -DSOURCE_DIR=tests/install -DWORK_DIR=/tmp/w -DGENERATOR=Ninja
#         -DCXX=g++ -P tests/install/run_install_test.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "install test: `${cmd}` failed (${rc}):\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The include tree is dualcast/ only: no jit/ folder, no header that includes jit/... .
file(GLOB_RECURSE installed RELATIVE ${prefix}/include ${prefix}/include/*)
foreach(header IN LISTS installed)
  if(NOT header MATCHES "^dualcast/" OR header MATCHES "(^|/)(jit|internal)/")
    message(FATAL_ERROR "install test: include/${header} is not a public dualcast/ header")
  endif()
  file(STRINGS ${prefix}/include/${header} bad REGEX "#include \"(jit|runtime)/")
  if(bad)
    message(FATAL_ERROR "install test: include/${header} includes an internal header: ${bad}")
  endif()
endforeach()
foreach(needed dualcast/dualcast.hpp dualcast/error.hpp dualcast/kernel.hpp dualcast/dual.hpp
        dualcast/trace/trace.h)
  if(NOT EXISTS ${prefix}/include/${needed})
    message(FATAL_ERROR "install test: include/${needed} was not installed")
  endif()
endforeach()
list(LENGTH installed count)
message(STATUS "install test: ${count} headers, all under include/dualcast/")

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
set(common -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${flags}"
    "-DCMAKE_EXE_LINKER_FLAGS=${flags}")
if(LAUNCHER)
  list(APPEND common -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()

foreach(project consumer:app dual_consumer:dual_app)
  string(REPLACE ":" ";" parts ${project})
  list(GET parts 0 dir)
  list(GET parts 1 exe)
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/${dir} -B ${WORK_DIR}/${dir} ${common})
  step(${CMAKE_COMMAND} --build ${WORK_DIR}/${dir})
  step(${WORK_DIR}/${dir}/${exe})
endforeach()
