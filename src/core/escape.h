#pragma once
/// \file escape.h
/// Strings that come from a model or a file (node names, op types, attribute and tensor names,
/// file names) are escaped before they go into a message, so a model cannot forge lines or send
/// terminal escape sequences: control bytes (C0, DEL, C1 as UTF-8) and bytes that are not valid
/// UTF-8 become \xNN; printable ASCII and valid printable UTF-8 stay as they are. Idempotent
/// (its output contains no byte it would escape), so escaping twice is harmless.

#include <string>
#include <string_view>

namespace ws {

/// `s` with control characters and invalid UTF-8 written as \xNN (one per byte).
std::string escape_text(std::string_view s);
/// "'" + escape_text(s) + "'": a model-supplied name as it appears in messages.
std::string quoted(std::string_view s);

}  // namespace ws
