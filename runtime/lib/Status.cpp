//===- Status.cpp - Error codes and Status --------------------------------===//

#include "attnc/runtime/Status.h"

namespace attnc {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "Ok";
  case ErrorCode::InvalidArgument:
    return "InvalidArgument";
  case ErrorCode::NotFound:
    return "NotFound";
  case ErrorCode::DriverNotFound:
    return "DriverNotFound";
  case ErrorCode::DriverError:
    return "DriverError";
  case ErrorCode::ParseError:
    return "ParseError";
  case ErrorCode::IoError:
    return "IoError";
  case ErrorCode::CacheCorrupt:
    return "CacheCorrupt";
  case ErrorCode::CompileError:
    return "CompileError";
  case ErrorCode::Unsupported:
    return "Unsupported";
  case ErrorCode::Internal:
    return "Internal";
  }
  return "Unknown";
}

std::string Status::toString() const {
  if (isOk())
    return "Ok";
  return std::string(errorCodeName(code_)) + ": " + message_;
}

Status &Status::withContext(const std::string &context) {
  if (!isOk())
    message_ = context + ": " + message_;
  return *this;
}

} // namespace attnc
