# Checking builds (docs/reliability.md, scripts/sanitize.sh): COLLSCOPE_SANITIZE=address,undefined or thread.
#
# Code that runs inside the traced job (the preload, its embedded store, the NCCL plugins: every target with the
# property COLLSCOPE_IN_JOB) cannot carry ASan or TSan: their runtimes must be
# the first library the process loads, and the preload is loaded by LD_PRELOAD into a job (and its launcher) that
# was not built with them. Such code gets UBSan in trap mode instead (no runtime library, nothing added to the
# preload's NEEDED list; undefined behaviour stops the job with SIGILL, which the tracer tests see). The
# preload's recorder is checked under TSan by unit tests that link it into a test program and drive it from
# threads (tests/tracer/pending_requests_test, thread_buffer_test). The programs the tests trace are built like
# any other (ASan, with ASAN_OPTIONS=verify_asan_link_order=0 since the preload comes first).
#
# Marks targets as loaded into the traced job (see above).
function(collscope_in_job)
  set_target_properties(${ARGN} PROPERTIES COLLSCOPE_IN_JOB ON)
endfunction()

set(COLLSCOPE_SANITIZE "" CACHE STRING "Sanitizers of a checking build: address,undefined or thread (empty: none)")
if(NOT COLLSCOPE_SANITIZE)
  return()
endif()

set(tool_flags -fsanitize=${COLLSCOPE_SANITIZE} -fno-omit-frame-pointer)
if(COLLSCOPE_SANITIZE MATCHES "undefined")
  # Every report fails the test that triggered it instead of scrolling by.
  list(APPEND tool_flags -fno-sanitize-recover=all)
endif()
if(COLLSCOPE_SANITIZE MATCHES "thread")
  # Under TSan nothing is preloaded into a job; the recorder itself is what is checked.
  set(job_flags ${tool_flags})
else()
  set(job_flags -fsanitize=undefined -fsanitize-undefined-trap-on-error)
endif()
set(in_job "$<BOOL:$<TARGET_PROPERTY:COLLSCOPE_IN_JOB>>")
# Optimisation: what CI can afford (docs/reliability.md). With ASan+UBSan, -O0 -g1 (line tables only: reports
# still name file and line) compiles in half the CPU time of -O1 -g1 and a third of RelWithDebInfo's -O2 -g
# (analyzer/src/cli.cpp 41.6 s -> 21.5 s of CPU, autotuner/src/tuner.cpp 46.3 s -> 22.6 s; plain -O2 -g: 24 and
# 26 s), and the checked tests spend little CPU (about 2 minutes at -O1). Code loaded into jobs stays at -O1 so
# that the traced jobs keep near their normal speed.
add_compile_options("$<IF:${in_job},-O1,-O0>" -g1)
foreach(flag IN LISTS tool_flags)
  add_compile_options("$<$<NOT:${in_job}>:${flag}>")
  add_link_options("$<$<NOT:${in_job}>:${flag}>")
endforeach()
foreach(flag IN LISTS job_flags)
  add_compile_options("$<${in_job}:${flag}>")
  if(COLLSCOPE_SANITIZE MATCHES "thread")
    add_link_options("$<${in_job}:${flag}>")
  endif()
endforeach()
message(STATUS "collscope: checking build with -fsanitize=${COLLSCOPE_SANITIZE} (code loaded into jobs: ${job_flags})")

