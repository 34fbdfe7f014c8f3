//===- JsonReader.cpp - Strict schema reading of JSON objects -------------===//

#include "attnc/runtime/JsonReader.h"

namespace attnc {

JsonObjectReader::JsonObjectReader(const Json &value, std::string where)
    : value_(value), where_(std::move(where)) {
  if (!value_.isObject())
    status_ = Status(ErrorCode::ParseError,
                     where_ + ": expected an object but found " +
                         jsonKindName(value_.kind()));
}

bool JsonObjectReader::has(std::string_view key) const {
  return value_.find(key) != nullptr;
}

void JsonObjectReader::fail(std::string_view key, const std::string &message) {
  if (status_.isOk())
    status_ = Status(ErrorCode::ParseError,
                     where_ + "." + std::string(key) + ": " + message);
}

const Json *JsonObjectReader::lookup(std::string_view key, bool required) {
  read_.emplace(key);
  const Json *member = value_.find(key);
  if (!member && required && status_.isOk())
    status_ =
        Status(ErrorCode::ParseError,
               where_ + ": missing required key \"" + std::string(key) + "\"");
  return member;
}

const Json *JsonObjectReader::getAny(std::string_view key, bool required) {
  return lookup(key, required);
}

const Json *JsonObjectReader::getValue(std::string_view key, Json::Kind kind,
                                       bool required) {
  const Json *member = lookup(key, required);
  if (!member)
    return nullptr;
  bool matches = member->kind() == kind ||
                 (kind == Json::Kind::Double && member->isNumber());
  if (!matches) {
    fail(key, std::string("expected ") + jsonKindName(kind) + " but found " +
                  jsonKindName(member->kind()));
    return nullptr;
  }
  return member;
}

void JsonObjectReader::getString(std::string_view key, std::string &out,
                                 bool required) {
  if (const Json *member = getValue(key, Json::Kind::String, required))
    out = member->asString();
}

void JsonObjectReader::getInt(std::string_view key, int64_t &out,
                              bool required) {
  if (const Json *member = getValue(key, Json::Kind::Int, required))
    out = member->asInt();
}

void JsonObjectReader::getBool(std::string_view key, bool &out, bool required) {
  if (const Json *member = getValue(key, Json::Kind::Bool, required))
    out = member->asBool();
}

void JsonObjectReader::getNumber(std::string_view key, double &out,
                                 bool required) {
  if (const Json *member = getValue(key, Json::Kind::Double, required))
    out = member->asDouble();
}

Status JsonObjectReader::finish() const {
  if (!status_.isOk())
    return status_;
  for (const Json::Member &member : value_.asObject())
    if (!read_.count(member.first))
      return Status(ErrorCode::ParseError,
                    where_ + ": unknown key \"" + member.first + "\"");
  return Status::ok();
}

} // namespace attnc
