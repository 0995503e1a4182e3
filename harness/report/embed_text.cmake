# Writes OUTPUT, a C++ source whose function FUNCTION returns INPUT's text
# (its bytes as they are, so any content survives): files the binaries carry
# instead of reading the source tree at run time.
#   cmake -DINPUT=file -DOUTPUT=file.cpp -DFUNCTION=name -P embed_text.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR byte_count "${hex_length} / 2")
# Sixteen bytes a line: break the hex every 32 digits, then write each byte as 0xNN.
string(REPEAT "[0-9a-f]" 32 line_of_hex)
string(REGEX REPLACE "(${line_of_hex})" "\\1\n    " hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
cmake_path(GET INPUT FILENAME input_name)
file(WRITE "${OUTPUT}.tmp"
"// Generated from ${input_name} by harness/report/embed_text.cmake at build time: do not edit.
#include <string_view>

namespace redline {

std::string_view ${FUNCTION}() {
  static constexpr unsigned char text[] = {
    ${bytes}0x00};
  return {reinterpret_cast<const char*>(text), ${byte_count}};
}

}  // namespace redline
")
# Only a changed text rewrites OUTPUT (ninja restats it): touching the input
# without changing it recompiles nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
