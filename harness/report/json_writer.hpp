// A small streaming JSON writer (pretty-printed, escaped per RFC 8259), so
// reports need no third-party JSON library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redline {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text) { return value(std::string_view(text)); }
  JsonWriter& value(double number);  // NaN and infinities become null
  JsonWriter& value(std::int64_t number);
  JsonWriter& value(int number) { return value(static_cast<std::int64_t>(number)); }
  JsonWriter& value(bool flag);
  JsonWriter& null();

  const std::string& str() const { return out_; }

 private:
  void before_value();
  void newline();
  std::string out_;
  std::vector<bool> has_items_;  // per open container
  bool after_key_ = false;
};

// "text" with quotes, escaped; a byte that is not UTF-8 becomes \ufffd.
std::string json_quote(std::string_view text);

// The text a JSON string's body (between its quotes) stands for: json_quote's
// inverse, and \uXXXX in general (written as UTF-8; surrogate pairs are not
// joined, as our writer never makes them).
std::string json_unquote_body(std::string_view body);

}  // namespace redline
