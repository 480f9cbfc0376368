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
