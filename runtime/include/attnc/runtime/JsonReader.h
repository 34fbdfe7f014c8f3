//===- JsonReader.h - Strict schema reading of JSON objects -----*- C++ -*-===//
//
// Reads the fields of one JSON object into C++ values, collecting the first
// error, and rejects keys nobody asked for: spec files and metadata must not
// silently ignore a misspelt field.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_JSONREADER_H
#define ATTNC_RUNTIME_JSONREADER_H

#include "attnc/runtime/Json.h"

#include <set>

namespace attnc {

class JsonObjectReader {
public:
  // `where` names the object in messages, e.g. "spec[2]" or "meta.json".
  JsonObjectReader(const Json &value, std::string where);

  bool has(std::string_view key) const;

  // Each getter leaves `out` unchanged when an optional key is absent.
  // Type errors and missing required keys are recorded; the first one wins.
  void getString(std::string_view key, std::string &out, bool required);
  void getInt(std::string_view key, int64_t &out, bool required);
  void getBool(std::string_view key, bool &out, bool required);
  // Accepts integers and numbers.
  void getNumber(std::string_view key, double &out, bool required);
  // Returns the raw member (marking it read) or null when absent; records
  // an error when required and absent, or when present with another kind.
  const Json *getValue(std::string_view key, Json::Kind kind, bool required);
  // Any kind (null included); records only the missing-required error.
  const Json *getAny(std::string_view key, bool required);

  // Records an error about a member's value ("<where>.<key>: <message>").
  void fail(std::string_view key, const std::string &message);

  // The first error, or an error naming the first unknown key.
  Status finish() const;

  const std::string &where() const { return where_; }

private:
  const Json *lookup(std::string_view key, bool required);

  const Json &value_;
  std::string where_;
  std::set<std::string, std::less<>> read_;
  Status status_;
};

} // namespace attnc

#endif // ATTNC_RUNTIME_JSONREADER_H
