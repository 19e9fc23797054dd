# GPU and annotation capture, compiled into libcollscope-preload.so (included by this folder's CMakeLists.txt).
# Nothing here links a CUDA, NCCL or CUPTI library: the headers give the types, and the libraries are found in
# the traced process at run time (dlsym / dlopen), so the same preload serves CPU-only jobs unchanged.
if(COLLSCOPE_NVTX3_INCLUDE_DIR)
  target_sources(collscope-preload PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nvtx_injection.cpp)
  target_include_directories(collscope-preload SYSTEM PRIVATE ${COLLSCOPE_NVTX3_INCLUDE_DIR})
  message(STATUS "collscope: preload is an NVTX injection library")
else()
  message(STATUS "collscope: NVTX 3 headers not found: NVTX injection not built")
endif()
