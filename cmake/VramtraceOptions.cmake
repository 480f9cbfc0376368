# Compiler flags shared by every component.
set(VRAMTRACE_SANITIZE "" CACHE STRING "Build with a sanitizer: address, undefined or thread")
set_property(CACHE VRAMTRACE_SANITIZE PROPERTY STRINGS "" address undefined thread)

# C and C++ only: nvcc takes host warnings through -Xcompiler (see gan_workload/ops).
add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-Wall> $<$<COMPILE_LANGUAGE:C,CXX>:-Wextra>
                    $<$<COMPILE_LANGUAGE:C,CXX>:-Werror>)
if(VRAMTRACE_SANITIZE)
  if(NOT VRAMTRACE_SANITIZE MATCHES "^(address|undefined|thread)$")
    message(FATAL_ERROR "VRAMTRACE_SANITIZE must be address, undefined or thread, not '${VRAMTRACE_SANITIZE}'")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=${VRAMTRACE_SANITIZE}>
                      $<$<COMPILE_LANGUAGE:C,CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${VRAMTRACE_SANITIZE})
  if(VRAMTRACE_SANITIZE STREQUAL "undefined")
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-fno-sanitize-recover=undefined>)
  endif()
endif()

# A sanitized libvramtrace.so preloaded into a program must come after the
# sanitizer's runtime (ASan/TSan check that they are first in the initial
# library list). Tests preload "${VRAMTRACE_TEST_PRELOAD_PREFIX}libvramtrace.so".
set(VRAMTRACE_TEST_PRELOAD_PREFIX "")
if(VRAMTRACE_SANITIZE MATCHES "^(address|thread)$")
  string(REPLACE "address" "asan" _vt_rt "${VRAMTRACE_SANITIZE}")
  string(REPLACE "thread" "tsan" _vt_rt "${_vt_rt}")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=lib${_vt_rt}.so
                  OUTPUT_VARIABLE _vt_rt_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(VRAMTRACE_TEST_PRELOAD_PREFIX "${_vt_rt_path}:")
endif()
