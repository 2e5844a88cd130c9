// Escaping of model- and file-supplied strings for messages; see escape.h.
#include "core/escape.h"

#include <cstdint>

namespace ws {
namespace {

void append_hex(std::string& out, unsigned char b) {
  static const char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[b >> 4];
  out += kHex[b & 15];
}

// Length of the valid UTF-8 sequence at s[i] (2..4) encoding a printable code point (not a C1
// control, not a surrogate, not overlong), or 0.
size_t utf8_printable_length(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len;
  uint32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) { len = 2; cp = b0 & 0x1Fu; }
  else if (b0 >= 0xE0 && b0 <= 0xEF) { len = 3; cp = b0 & 0x0Fu; }
  else if (b0 >= 0xF0 && b0 <= 0xF4) { len = 4; cp = b0 & 0x07u; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;  // overlong / range
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;                                                  // surrogates
  if (cp >= 0x80 && cp <= 0x9F) return 0;                                                      // C1 controls
  if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) return 0;              // bidi overrides
  return len;
}

}  // namespace

std::string escape_text(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b >= 0x20 && b < 0x7F) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    if (b >= 0x80) {
      if (size_t len = utf8_printable_length(s, i)) {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
    }
    append_hex(out, b);
    ++i;
  }
  return out;
}

std::string escape_name(std::string_view s) {
  if (s.size() <= kMaxShownNameBytes) return escape_text(s);
  size_t cut = kMaxShownNameBytes;
  // Back up over UTF-8 continuation bytes so a multi-byte character is kept whole or dropped whole.
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return escape_text(s.substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string quoted(std::string_view s) { return "'" + escape_name(s) + "'"; }

}  // namespace ws
