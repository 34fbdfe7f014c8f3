//===- Status.h - Error codes, Status and Result<T> -------------*- C++ -*-===//
//
// The runtime reports errors as values: a code plus a message a user can act
// on. Nothing throws across the C ABI, so the C++ API does not throw either.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_STATUS_H
#define ATTNC_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace attnc {

// Values are part of the C ABI (attnc_status in attnc.h); append only.
enum class ErrorCode : int {
  Ok = 0,
  InvalidArgument = 1, // bad spec, bad launch arguments
  NotFound = 2,        // cache miss without a compiler, missing kernel entry
  DriverNotFound = 3,  // libcuda.so.1 could not be loaded
  DriverError = 4,     // a cu* call failed
  ParseError = 5,      // JSON or metadata syntax/schema error
  IoError = 6,         // filesystem error
  CacheCorrupt = 7,    // an entry failed verification
  CompileError = 8,    // the linked compiler failed
  Unsupported = 9,     // valid input the runtime cannot handle
  Internal = 10,
};

const char *errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }

  bool isOk() const { return code_ == ErrorCode::Ok; }
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }

  // "<CodeName>: <message>", for logs.
  std::string toString() const;

  // Prefix the message with context ("loading kernel abc: ...").
  Status &withContext(const std::string &context);

private:
  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
};

inline Status makeError(ErrorCode code, std::string message) {
  return Status(code, std::move(message));
}

// A value or an error Status. Accessing the value of an error is a bug
// (asserted).
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) {
    assert(!status_.isOk() && "Result built from an OK status without value");
  }

  bool isOk() const { return value_.has_value(); }
  const Status &status() const { return status_; }

  T &value() & {
    assert(isOk());
    return *value_;
  }
  const T &value() const & {
    assert(isOk());
    return *value_;
  }
  T &&value() && {
    assert(isOk());
    return std::move(*value_);
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }

private:
  std::optional<T> value_;
  Status status_;
};

} // namespace attnc

// Early-return helpers; keep call sites to one line per fallible step.
#define ATTNC_CONCAT_INNER(a, b) a##b
#define ATTNC_CONCAT(a, b) ATTNC_CONCAT_INNER(a, b)

#define ATTNC_RETURN_IF_ERROR(expr)                                            \
  do {                                                                         \
    ::attnc::Status attncStatus_ = (expr);                                     \
    if (!attncStatus_.isOk())                                                  \
      return attncStatus_;                                                     \
  } while (false)

#define ATTNC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)                            \
  auto tmp = (expr);                                                           \
  if (!tmp.isOk())                                                             \
    return tmp.status();                                                       \
  lhs = std::move(tmp).value()

#define ATTNC_ASSIGN_OR_RETURN(lhs, expr)                                      \
  ATTNC_ASSIGN_OR_RETURN_IMPL(ATTNC_CONCAT(attncResult_, __LINE__), lhs, expr)

#endif // ATTNC_RUNTIME_STATUS_H
