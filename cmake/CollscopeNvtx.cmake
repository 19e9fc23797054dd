# Header-only NVTX 3 (ships with the CUDA toolkit). Without the toolkit, the vendored copy is absent
# and NVTX annotations compile to nothing via COLLSCOPE_NO_NVTX.
add_library(collscope_nvtx INTERFACE)
find_path(COLLSCOPE_NVTX3_INCLUDE_DIR nvtx3/nvToolsExt.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
if(COLLSCOPE_NVTX3_INCLUDE_DIR)
  target_include_directories(collscope_nvtx SYSTEM INTERFACE ${COLLSCOPE_NVTX3_INCLUDE_DIR})
  target_link_libraries(collscope_nvtx INTERFACE ${CMAKE_DL_LIBS})
  message(STATUS "collscope: NVTX 3 headers at ${COLLSCOPE_NVTX3_INCLUDE_DIR}")
else()
  target_compile_definitions(collscope_nvtx INTERFACE COLLSCOPE_NO_NVTX=1)
  message(STATUS "collscope: NVTX 3 headers not found: annotations disabled")
endif()
