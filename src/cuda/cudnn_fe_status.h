#pragma once
/// \file cudnn_fe_status.h
/// A cudnn-frontend error (cudnn_frontend::error_t, or anything with get_message()) as a Status naming what failed:
/// "<what>: <step> failed: <frontend message>". `refusal` = the graph or configuration is not supported (validate,
/// build, plan creation: kUnsupported, so the caller falls back); otherwise a failure at run time (kCuda).
/// Header-only and frontend-free (a template), so only the files that include cudnn_frontend.h instantiate it:
/// src/engine/cuda/cudnn_fe_conv.cpp and src/flow/models/ltx_sdpa_cudnn.cpp.
#include <string>
#include <utility>

#include "warpstream/status.h"

namespace ws::cuda {

template <class FrontendError>  // by value: the frontend's get_message() is not const
Status cudnn_fe_status(FrontendError e, const std::string& what, const char* step, bool refusal) {
  std::string msg = what + ": " + step + " failed: " + e.get_message();
  return refusal ? unsupported(std::move(msg)) : Status(StatusCode::kCuda, std::move(msg));
}

}  // namespace ws::cuda
