# ctest driver (cmake -P): fails when `readelf -d LIBRARY` lists a CUDA library (libdualcast.so must load without the toolkit).
#
# NVRTC and the driver are dlopen'ed at run time (jit/cuda/nvrtc_api.h,
# jit/cuda/driver.cc); a NEEDED entry for any of them would make the CPU
# library fail to start on a machine without CUDA.
#
# Example:
#   cmake -DLIBRARY=build/libdualcast.so -P tests/install/check_needed.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED LIBRARY)
  message(FATAL_ERROR "check_needed.cmake: -DLIBRARY=... is required")
endif()
find_program(READELF readelf REQUIRED)
execute_process(COMMAND ${READELF} -d ${LIBRARY} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIBRARY} failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${out}")
list(LENGTH needed count)
if(count EQUAL 0)
  message(FATAL_ERROR "readelf -d ${LIBRARY} shows no NEEDED entries at all: not a shared library?")
endif()
set(bad "")
foreach(entry IN LISTS needed)
  if(entry MATCHES "\\[(lib(cuda|cudart|nvrtc|nvJitLink|cublas|cublasLt|nvptxcompiler)[^]]*)\\]")
    list(APPEND bad ${CMAKE_MATCH_1})
  endif()
endforeach()
string(REPLACE ";" "\n  " all "${needed}")
message(STATUS "${LIBRARY}:\n  ${all}")
if(bad)
  message(FATAL_ERROR "${LIBRARY} needs CUDA libraries at load time: ${bad}. Load them with "
                      "dlopen at run time instead (see jit/cuda/nvrtc_api.h, jit/cuda/driver.cc).")
endif()
message(STATUS "no CUDA/NVRTC library among ${count} NEEDED entries")
