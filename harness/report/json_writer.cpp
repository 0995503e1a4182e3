#include "harness/report/json_writer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "harness/report/report.hpp"

namespace redline {

namespace {

// The length of the well-formed UTF-8 sequence at text[i], or 0 when the
// bytes there are not one (a stray continuation, a truncated, overlong or
// surrogate sequence): RFC 8259 text must be UTF-8, and Python's json refuses
// a file that is not.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  unsigned char second_min = 0x80, second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) length = 3, second_min = lead == 0xE0 ? 0xA0 : 0x80, second_max = lead == 0xED ? 0x9F : 0xBF;
  else if (lead >= 0xF0 && lead <= 0xF4) length = 4, second_min = lead == 0xF0 ? 0x90 : 0x80, second_max = lead == 0xF4 ? 0x8F : 0xBF;
  else return 0;
  if (i + length > text.size() || byte(i + 1) < second_min || byte(i + 1) > second_max) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (c < 0x80) {
          out += static_cast<char>(c);
        } else if (const std::size_t length = utf8_sequence_length(text, i)) {
          out += text.substr(i, length);
          i += length - 1;
        } else {
          out += "\\ufffd";  // a byte that is not UTF-8 (a trainer's raw log byte): the replacement character
        }
    }
  }
  return out + '"';
}

std::string json_unquote_body(std::string_view body) {
  std::string out;
  const auto append_utf8 = [&out](unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  };
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char escaped = body[++i];
    switch (escaped) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        const bool four_hex_digits =
            i + 4 < body.size() &&
            std::all_of(body.begin() + i + 1, body.begin() + i + 5, [](char d) { return std::isxdigit(static_cast<unsigned char>(d)); });
        if (!four_hex_digits) {
          out += "\\u";  // kept as written
          break;
        }
        append_utf8(static_cast<unsigned>(std::stoul(std::string(body.substr(i + 1, 4)), nullptr, 16)));
        i += 4;
        break;
      }
      default: out += escaped;  // \" \\ \/
    }
  }
  return out;
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * has_items_.size(), ' ');
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_items_.empty()) {
    if (has_items_.back()) out_ += ',';
    has_items_.back() = true;
    newline();
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  const bool had = has_items_.back();
  has_items_.pop_back();
  if (had) newline();
  out_ += '}';
  if (has_items_.empty()) out_ += '\n';
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  const bool had = has_items_.back();
  has_items_.pop_back();
  if (had) newline();
  out_ += ']';
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  out_ += json_quote(name) + ": ";
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  before_value();
  out_ += json_quote(text);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  before_value();
  out_ += std::isfinite(number) ? metric_text(number) : "null";
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
  before_value();
  out_ += std::to_string(number);
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  before_value();
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace redline
