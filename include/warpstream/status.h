#pragma once
/// \file status.h
/// Errors as values. Every fallible WarpStream function returns `Status` or `Result<T>`;
/// nothing throws across the public API and nothing calls exit(). A message names what a user
/// can act on: the file and byte offset, the node name and op type, the attribute and opset.

#include <string>
#include <utility>
#include <variant>

namespace ws {

/// Broad class of an error; the message carries the specifics.
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  ///< a caller-supplied value is out of range (K = 0, bad flag …)
  kNotFound,         ///< a file, tensor or node does not exist
  kUnsupported,      ///< valid input we do not implement (op, attribute value, dtype, opset)
  kInvalidModel,     ///< a model file is malformed or inconsistent (truncated, bad shapes)
  kInvalidImage,     ///< an image file cannot be decoded
  kResourceExhausted,///< a size limit was exceeded (a tensor promising gigabytes …)
  kFailedPrecondition,///< an object is in the wrong state for the call (lane not acquired …)
  kInternal,         ///< a bug in WarpStream; please report it
  kCuda,             ///< a CUDA / cuDNN / cuBLAS call failed
};

/// Short lowercase name of a code ("invalid model"), used as the message prefix.
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  /// "invalid model: node 'conv1' (Conv, opset 13): attribute 'group' = 0 must be >= 1"
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status invalid_model(std::string m) { return {StatusCode::kInvalidModel, std::move(m)}; }
inline Status invalid_image(std::string m) { return {StatusCode::kInvalidImage, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

/// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT(implicit)
  Result(Status status) : v_(std::move(status)) {}     // NOLINT(implicit); must not be ok
  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOkStatus;
    return is_ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ws

/// Return early from the enclosing function when `expr` (a Status) is not ok.
#define WS_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::ws::Status ws_status_ = (expr);            \
    if (!ws_status_.is_ok()) return ws_status_;  \
  } while (0)

#define WS_CONCAT_INNER(a, b) a##b
#define WS_CONCAT(a, b) WS_CONCAT_INNER(a, b)
/// `WS_ASSIGN_OR_RETURN(auto x, f())`: bind the value of a Result or return its Status.
#define WS_ASSIGN_OR_RETURN(lhs, expr) WS_ASSIGN_OR_RETURN_IMPL(WS_CONCAT(ws_result_, __LINE__), lhs, expr)
#define WS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.is_ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
