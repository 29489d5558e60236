# Shared compile settings as interface targets (ccache/taskflow style).
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

add_library(infer_plan_settings INTERFACE)
target_compile_features(infer_plan_settings INTERFACE cxx_std_20)
target_include_directories(infer_plan_settings INTERFACE ${PROJECT_SOURCE_DIR})

add_library(infer_plan_warnings INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(infer_plan_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow>)
  if(INFER_PLAN_WERROR)
    target_compile_options(infer_plan_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endif()

if(INFER_PLAN_FUZZ)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()

if(INFER_PLAN_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()

# Build time (CI has two cores; the test and the sanitizer builds each compile everything):
# - a precompiled header of the large header-only libraries for the targets with many sources
#   (the planner, the runtime, the CLI's commands, the test binaries): each of their files
#   parses CLI11, nlohmann/json, fmt and doctest in about half its compile time;
option(INFER_PLAN_PCH "Precompile CLI11, fmt, nlohmann/json and doctest for the libraries, the CLI and the tests" ON)
function(infer_plan_precompile TARGET)
  if(INFER_PLAN_PCH)
    target_precompile_headers(${TARGET} PRIVATE ${ARGN})
  endif()
endfunction()
# - under the sanitizers, the kernels and the runtime at -O1 (ASan's recommended level): at -O0
#   the runtime's tests spend minutes in instrumented matrix products; asserts stay on.
function(infer_plan_sanitized_speed TARGET)
  if(INFER_PLAN_SANITIZE AND CMAKE_BUILD_TYPE STREQUAL "Debug")
    target_compile_options(${TARGET} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-O1>)
  endif()
endfunction()
