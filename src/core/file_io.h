#pragma once
/// \file file_io.h
/// Whole-file reads and writes with errors a user can act on: a missing file, a directory, a file
/// over a size limit, and write failures carry the path and the OS reason (strerror).

#include <cstddef>
#include <string>
#include <vector>

#include "warpstream/status.h"

namespace ws {

/// Reads a regular file of at most `max_bytes`: opened non-blocking and checked with fstat on the opened descriptor,
/// so a FIFO, device, socket or directory is refused ("not a regular file") before a byte is read and never blocks.
/// Every config / index / report / label reader goes through this. Errors name the path and the OS reason:
/// kNotFound (the file or a folder on its path does not exist), kInvalidArgument (a directory or other non-regular
/// file, a name too long, a symlink loop), kFailedPrecondition (it exists but cannot be opened: permission denied,
/// too many open files, an I/O error), kResourceExhausted (over max_bytes).
/// `what` names the file's role in messages ("model file", "image file").
Result<std::vector<char>> read_regular_file(const std::string& path, const std::string& what,
                                            size_t max_bytes = size_t{1} << 31);

/// Checks, without reading it, that `path` is a regular file read_regular_file would open: the same errors and
/// messages (missing, a directory / FIFO / device, a name too long, permission denied). For a CLI's up-front
/// checks, so a typo is reported before a device starts.
Status check_regular_file(const std::string& path, const std::string& what);

/// Writes `bytes` to `path` (truncating). Opened non-blocking, so a FIFO with no reader is refused
/// (kFailedPrecondition) instead of blocking; a FIFO with a reader is written. Errors name the path and the OS
/// reason (kNotFound for a missing directory, kInvalidArgument for a directory target or a name too long,
/// kFailedPrecondition otherwise).
Status write_file(const std::string& path, const void* bytes, size_t size, const std::string& what);

}  // namespace ws
