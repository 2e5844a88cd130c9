#include "warpstream/status.h"

#include "core/escape.h"

namespace ws {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kInvalidModel: return "invalid model";
    case StatusCode::kInvalidImage: return "invalid image";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kFailedPrecondition: return "failed precondition";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kCuda: return "cuda error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  // Escaped as a backstop: a message is one line and carries no control bytes, whatever strings
  // from a model or file went into it (escape_text is idempotent, so pre-escaped parts are unchanged).
  return std::string(status_code_name(code_)) + ": " + escape_text(message_);
}

}  // namespace ws
