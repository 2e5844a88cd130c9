# cudnn-frontend (header-only C++ API over the cuDNN graph backend) for the fused SDPA of the GPU LTX block and the
# CUDA executor's NHWC conv graphs (src/engine/cuda/cudnn_fe_conv.cpp: every engine configuration a tactic).
# Included from the top-level CMakeLists.txt after the CUDA library target exists (one line there).
#
# WS_CUDNN_FRONTEND_DIR: directory holding cudnn_frontend.h; empty = auto-detect <repo>/.cudnn_frontend/include
# (scripts/fetch-cudnn-frontend.sh puts the headers there). Found -> WS_HAVE_CUDNN_FRONTEND=1 is defined for, and the
# include path given to, ONLY the files listed in WS_CUDNN_FRONTEND_SOURCES (the headers are heavy and bundle their
# own nlohmann-json copy, so nothing else sees them). Not found -> those files compile their "not built" stubs and the
# block reports the fallback SDPA kernel at every call site.
#
# Until the module targets land (ws_flow), src/flow/models/*.{cpp,cu} are added to warpstream_cuda here; once a
# ws_flow target exists its own glob owns them and this file only sets the per-file properties.
set(WS_CUDNN_FRONTEND_DIR "" CACHE PATH "cudnn-frontend include dir (cudnn_frontend.h); empty = auto-detect")

set(_ws_flow_target "")
if(TARGET ws_flow)
  set(_ws_flow_target ws_flow)
elseif(TARGET warpstream_cuda)
  set(_ws_flow_target warpstream_cuda)
  file(GLOB _ws_flow_models CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/flow/models/*.cpp
                                              ${PROJECT_SOURCE_DIR}/src/flow/models/*.cu)
  if(_ws_flow_models)
    target_sources(warpstream_cuda PRIVATE ${_ws_flow_models})
  endif()
endif()

set(WS_CUDNN_FRONTEND_SOURCES ${PROJECT_SOURCE_DIR}/src/flow/models/ltx_sdpa_cudnn.cpp
                               ${PROJECT_SOURCE_DIR}/src/engine/cuda/cudnn_fe_conv.cpp)

if(_ws_flow_target)
  set(_ws_cfe "${WS_CUDNN_FRONTEND_DIR}")
  if(NOT _ws_cfe AND EXISTS ${PROJECT_SOURCE_DIR}/.cudnn_frontend/include/cudnn_frontend.h)
    set(_ws_cfe ${PROJECT_SOURCE_DIR}/.cudnn_frontend/include)
  endif()
  if(_ws_cfe AND EXISTS ${_ws_cfe}/cudnn_frontend.h)
    set_source_files_properties(${WS_CUDNN_FRONTEND_SOURCES} TARGET_DIRECTORY ${_ws_flow_target} PROPERTIES
      INCLUDE_DIRECTORIES "${_ws_cfe}"
      COMPILE_DEFINITIONS "WS_HAVE_CUDNN_FRONTEND=1")
    # cudnn-frontend >= 1.1x carries NVRTC-compiled experimental engines that its headers instantiate.
    target_link_libraries(${_ws_flow_target} PRIVATE CUDA::nvrtc)
    if(TARGET ws_engine_cuda)  # the NHWC conv graphs (src/engine/cuda/cudnn_fe_conv.cpp)
      target_link_libraries(ws_engine_cuda PRIVATE CUDA::nvrtc)
    endif()
    message(STATUS "warpstream: cudnn-frontend ON (${_ws_cfe}) for the LTX block's fused SDPA and the NHWC conv graphs")
  else()
    message(STATUS "warpstream: cudnn-frontend OFF (run scripts/fetch-cudnn-frontend.sh or set WS_CUDNN_FRONTEND_DIR); "
                   "the LTX block uses its fallback SDPA kernel")
  endif()
endif()
