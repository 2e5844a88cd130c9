#pragma once
/// \file escape.h
/// Strings that come from a model or a file (node names, op types, attribute and tensor names,
/// file names) are escaped before they go into a message, so a model cannot forge lines or send
/// terminal escape sequences: control bytes (C0, DEL, C1 as UTF-8) and bytes that are not valid
/// UTF-8 become \xNN; printable ASCII and valid printable UTF-8 stay as they are. escape_text is idempotent
/// (its output contains no byte it would escape), so escaping twice is harmless; names are also truncated
/// (escape_name, quoted).

#include <cstddef>
#include <string>
#include <string_view>

namespace ws {

/// Bytes of a name shown in a message; the rest is replaced by "... (N bytes)" (N = the name's full size), so a
/// megabyte-long label or tensor name cannot flood a line.
inline constexpr size_t kMaxShownNameBytes = 200;

/// `s` with control characters and invalid UTF-8 written as \xNN (one per byte). Whole messages go through this
/// (never truncated).
std::string escape_text(std::string_view s);
/// A name (label, tensor, node, file, case folder) for a message or a table cell: escape_text of its first
/// kMaxShownNameBytes bytes (never cutting a UTF-8 sequence in two), then "... (N bytes)" when longer.
std::string escape_name(std::string_view s);
/// "'" + escape_name(s) + "'": a model-supplied name as it appears in messages.
std::string quoted(std::string_view s);

}  // namespace ws
