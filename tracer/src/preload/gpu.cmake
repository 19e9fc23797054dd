# GPU and annotation capture, compiled into libcollscope-preload.so (included by this folder's CMakeLists.txt).
# Nothing here links a CUDA, NCCL or CUPTI library: the headers give the types, and the libraries are found in
# the traced process at run time (dlsym / dlopen), so the same preload serves CPU-only jobs unchanged.
if(COLLSCOPE_NVTX3_INCLUDE_DIR)
  target_sources(collscope-preload PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nvtx/nvtx_injection.cpp)
  target_include_directories(collscope-preload SYSTEM PRIVATE ${COLLSCOPE_NVTX3_INCLUDE_DIR})
  message(STATUS "collscope: preload is an NVTX injection library")
else()
  message(STATUS "collscope: NVTX 3 headers not found: NVTX injection not built")
endif()

if(CUDAToolkit_FOUND)
  find_path(COLLSCOPE_CUPTI_INCLUDE_DIR cupti_activity.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}/extras/CUPTI/include /usr/local/cuda/extras/CUPTI/include)
endif()
if(CUDAToolkit_FOUND AND COLLSCOPE_NCCL_INCLUDE_DIR AND COLLSCOPE_CUPTI_INCLUDE_DIR)
  # Pure parts (CUPTI record decoding, collective/kernel matching, fusion-copy attribution): a static library
  # that the preload and the CPU tests both link. Registrations live only in the preload's own sources.
  add_library(collscope_gpu_capture STATIC
    ${CMAKE_CURRENT_LIST_DIR}/cuda/cupti_decode.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda/gpu_fusion.cpp)
  target_include_directories(collscope_gpu_capture PUBLIC ${CMAKE_CURRENT_LIST_DIR})
  target_include_directories(collscope_gpu_capture SYSTEM PUBLIC
    ${CUDAToolkit_INCLUDE_DIRS} ${COLLSCOPE_NCCL_INCLUDE_DIR} ${COLLSCOPE_CUPTI_INCLUDE_DIR})
  target_link_libraries(collscope_gpu_capture PUBLIC collscope_tracer_runtime)
  set_target_properties(collscope_gpu_capture PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

  target_sources(collscope-preload PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/nccl/nccl_interpose.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cuda/cupti_collector.cpp
    ${COLLSCOPE_TRACER_NCCL_DIR}/nccl_profile_bridge.cpp
    ${COLLSCOPE_TRACER_NCCL_DIR}/nccl_profile_sink.cpp)
  # The sink and bridge are shared with the NCCL profiler plugin (tracer/src/nccl), which compiles them too.
  target_include_directories(collscope-preload PRIVATE ${COLLSCOPE_TRACER_NCCL_DIR})
  # The preload exports collscope_recorder_bridge_v1(): the NCCL profiler plugin records through it.
  target_compile_definitions(collscope-preload PRIVATE COLLSCOPE_EXPORT_RECORDER_BRIDGE=1)
  target_link_libraries(collscope-preload PRIVATE collscope_gpu_capture)
  set(COLLSCOPE_GPU_CAPTURE ON CACHE INTERNAL "NCCL interposer and CUPTI collector built into the preload")
  message(STATUS "collscope: preload interposes NCCL and collects CUPTI activity (opened at run time)")
else()
  set(COLLSCOPE_GPU_CAPTURE OFF CACHE INTERNAL "NCCL interposer and CUPTI collector built into the preload")
  message(STATUS "collscope: CUDA toolkit, nccl.h or CUPTI headers missing: NCCL/CUPTI capture not built")
endif()
