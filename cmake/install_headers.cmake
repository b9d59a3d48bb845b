# Install-time script: the public runtime headers and the tracer headers they need, with jit/ includes rewritten to dualcast/trace/.
#
# A consumer's include tree holds only dualcast/: the runtime's public headers
# (runtime/include/dualcast, the dual/ ones are installed by their own rule),
# plus the tracer headers they include, because kernel() traces the user's
# lambda at compile time in the consumer's code (jit/ir/ir.h, jit/trace/trace.h,
# jit/trace/var.h, jit/ir/ops.def, jit/stats.h at the time of writing). Those go to
# <prefix>/include/dualcast/trace/ and every `#include "jit/X"` (or
# "jit/<role>/X") in an installed header becomes `#include
# "dualcast/trace/X"`. The set is the include closure of the public headers,
# computed here on every install, so a new include in a public header is
# picked up without editing a list; internal headers
# (runtime/include/dualcast/detail/lazy.hpp, jit/cuda/..., the backends) are
# not installed. The source tree keeps its `jit/` spelling (no churn in code).
#
# Variables (set by the install(CODE) in cmake/install.cmake):
#   DUALCAST_SOURCE_DIR   the project's source folder
#   DUALCAST_INCLUDE_DIR  the absolute destination include folder (DESTDIR applied)
#
# Example (what `cmake --install build --prefix /opt/dc` runs):
#   set(DUALCAST_SOURCE_DIR /src/dualcast) set(DUALCAST_INCLUDE_DIR /opt/dc/include)
#   include(/src/dualcast/cmake/install_headers.cmake)
#   # -> /opt/dc/include/dualcast/kernel.hpp with #include "dualcast/trace/trace.h"

cmake_policy(VERSION 3.25)  # cmake_install.cmake runs with old policies; include() scopes this
set(_dc_src ${DUALCAST_SOURCE_DIR})
file(GLOB _dc_roots RELATIVE ${_dc_src}/runtime/include ${_dc_src}/runtime/include/dualcast/*.hpp)
set(_dc_queue ${_dc_roots})
set(_dc_done "")
set(_dc_trace_names "")  # installed dualcast/trace/ names, to catch two sources with one name
while(_dc_queue)
  list(POP_FRONT _dc_queue _dc_name)
  if(_dc_name IN_LIST _dc_done)
    continue()
  endif()
  list(APPEND _dc_done ${_dc_name})
  if(_dc_name MATCHES "^jit/([^/]+/)?([^/]+)$")
    # jit/X and jit/<role>/X both install as dualcast/trace/X: the consumer's
    # tree does not change when jit/ is arranged in role folders.
    set(_dc_from ${_dc_src}/${_dc_name})
    set(_dc_to ${DUALCAST_INCLUDE_DIR}/dualcast/trace/${CMAKE_MATCH_2})
    if(CMAKE_MATCH_2 IN_LIST _dc_trace_names)
      message(FATAL_ERROR "dualcast install: two tracer headers named ${CMAKE_MATCH_2} "
                          "(one is ${_dc_name}); rename one")
    endif()
    list(APPEND _dc_trace_names ${CMAKE_MATCH_2})
  elseif(_dc_name MATCHES "^jit/")
    message(FATAL_ERROR "dualcast install: public headers include ${_dc_name}; only jit/X and "
                        "jit/<role>/X can be installed (as dualcast/trace/X)")
  elseif(EXISTS ${_dc_src}/runtime/include/${_dc_name})
    set(_dc_from ${_dc_src}/runtime/include/${_dc_name})
    set(_dc_to ${DUALCAST_INCLUDE_DIR}/${_dc_name})
  else()
    continue()  # dual/ headers (their own install rule) and third-party ones (absl/...)
  endif()
  if(NOT EXISTS ${_dc_from})
    message(FATAL_ERROR "dualcast install: ${_dc_name} is included by a public header but "
                        "${_dc_from} does not exist")
  endif()
  file(READ ${_dc_from} _dc_text)
  string(REGEX MATCHALL "#include \"[^\"]+\"" _dc_includes "${_dc_text}")
  foreach(_dc_inc IN LISTS _dc_includes)
    string(REGEX REPLACE "#include \"([^\"]+)\"" "\\1" _dc_inc "${_dc_inc}")
    if(_dc_inc MATCHES "^(jit|runtime|bench|examples|tests)/" AND NOT _dc_inc MATCHES "^jit/")
      message(FATAL_ERROR "dualcast install: public header ${_dc_name} includes ${_dc_inc}, "
                          "which is not part of the public tree")
    endif()
    list(APPEND _dc_queue ${_dc_inc})
  endforeach()
  string(REGEX REPLACE "#include \"jit/([^\"/]+/)?([^\"/]+)\"" "#include \"dualcast/trace/\\2\""
         _dc_text "${_dc_text}")
  message(STATUS "Installing: ${_dc_to}")
  file(WRITE ${_dc_to} "${_dc_text}")
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES ${_dc_to})
endwhile()
