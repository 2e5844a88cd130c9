// Whole-file I/O with actionable errors; see file_io.h.
#include "core/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ws {

namespace {

// Only a missing file (or a missing folder on the way) is kNotFound: a permission error used to read as "not found"
// too, which sends a user looking for a file that is there.
Status open_error(const std::string& path, const std::string& doing, int err) {
  std::string m = path + ": " + doing + " (" + std::strerror(err) + ")";
  if (err == ENOENT || err == ENOTDIR) return not_found(std::move(m));
  if (err == ENAMETOOLONG || err == ELOOP || err == EISDIR) return invalid_argument(std::move(m));
  return failed_precondition(std::move(m));  // EACCES, EPERM, EMFILE, EIO, ...
}

// The refusal of a non-regular file read_regular_file and check_regular_file share (ok for a regular file).
Status regular_or_refusal(const std::string& path, const std::string& what, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return invalid_argument(path + ": is a directory, not a regular file (expected the " + what + ")");
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode)                                        ? "a socket"
                                                                                     : "special";
    return invalid_argument(path + ": is not a regular file (" + kind + "; expected the " + what + ")");
  }
  return Status::ok();
}

}  // namespace

Status check_regular_file(const std::string& path, const std::string& what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return open_error(path, "cannot open the " + what, errno);
  struct stat st {};
  const int rc = ::fstat(fd, &st);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return not_found(path + ": cannot stat the " + what + " (" + std::strerror(err) + ")");
  return regular_or_refusal(path, what, st);
}

Result<std::vector<char>> read_regular_file(const std::string& path, const std::string& what, size_t max_bytes) {
  // Open first (non-blocking: opening a FIFO with no writer must not hang), then decide on the opened file's fstat,
  // so the file checked is the file read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return open_error(path, "cannot open the " + what, errno);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return not_found(path + ": cannot stat the " + what + " (" + std::strerror(errno) + ")");
  WS_RETURN_IF_ERROR(regular_or_refusal(path, what, st));
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return resource_exhausted(path + ": the " + what + " is " + std::to_string(st.st_size) + " bytes, over the " +
                              std::to_string(max_bytes) + "-byte limit");
  }
  // Read exactly the size fstat gave (a file growing meanwhile cannot push the read past the bound).
  std::vector<char> bytes(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got != bytes.size()) {
    return not_found(path + ": read of the " + what + " failed after " + std::to_string(got) + " of " +
                     std::to_string(bytes.size()) + " bytes");
  }
  return bytes;
}

Status write_file(const std::string& path, const void* bytes, size_t size, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return invalid_argument(path + ": is a directory; give a file path for the " + what);
  }
  // Non-blocking open: a FIFO with no reader fails at once (ENXIO) instead of blocking forever; one with a reader
  // (a shell's >(...)) is written in blocking mode below.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    if (e == ENXIO) return failed_precondition(path + ": is a FIFO with no reader; cannot write the " + what + " to it");
    return open_error(path, "cannot write the " + what, e);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const char* p = static_cast<const char*>(bytes);
  size_t put = 0;
  int e = 0;
  while (put < size) {
    const ssize_t n = ::write(fd, p + put, size - put);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) { e = n < 0 ? errno : EIO; break; }
    put += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && e == 0) e = errno;
  if (put != size || e != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  path + ": writing the " + what + " failed (" + std::strerror(e ? e : EIO) + ")");
  }
  return Status::ok();
}

}  // namespace ws
