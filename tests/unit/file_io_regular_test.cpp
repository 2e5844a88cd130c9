// read_regular_file (src/core/file_io.h) and SafetensorsFile::open refuse FIFOs, devices and directories before
// reading — a FIFO with no writer used to block the CLI forever — and bound what they read.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/file_io.h"
#include "support/safetensors_writer.h"
#include "support/test_util.h"
#include "warpstream/safetensors.h"

namespace ws {
namespace {

void expect_has(const Status& st, const std::string& what) {
  EXPECT_NE(st.message().find(what), std::string::npos) << "missing '" << what << "' in: " << st.to_string();
}

TEST(ReadRegularFile, RefusesFifoDeviceAndDirectoryWithoutBlocking) {
  test::TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto f = read_regular_file(fifo, "config file");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ASSERT_FALSE(f.is_ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  expect_has(f.status(), "not a regular file (a FIFO; expected the config file)");
  auto d = read_regular_file("/dev/zero", "report JSON");
  ASSERT_FALSE(d.is_ok());
  expect_has(d.status(), "not a regular file (a device");
  auto dd = read_regular_file(dir.path().string(), "index");
  ASSERT_FALSE(dd.is_ok());
  expect_has(dd.status(), "is a directory, not a regular file");
}

// Open errors carry a code that says what to do: only a missing file is kNotFound (a permission error used to read
// as "not found"); a name too long is kInvalidArgument; a file that exists but cannot be opened is kFailedPrecondition.
TEST(ReadRegularFile, OpenErrorsSayWhatIsWrong) {
  test::TempDir dir;
  auto missing = read_regular_file(dir.file("absent.json"), "config file");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  expect_has(missing.status(), "absent.json: cannot open the config file (No such file or directory)");
  auto too_long = read_regular_file(dir.file(std::string(300, 'a')), "model file");
  ASSERT_FALSE(too_long.is_ok());
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument) << too_long.status().to_string();
  expect_has(too_long.status(), "File name too long");
  const std::string locked = dir.file("locked.png");
  test::write_file(locked, "x");
  ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
  auto denied = read_regular_file(locked, "image file");
  if (::geteuid() == 0) {  // root opens it anyway: nothing to check here (CI runs as root; the other two cases still ran)
    EXPECT_TRUE(denied.is_ok());
    return;
  }
  ASSERT_FALSE(denied.is_ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kFailedPrecondition) << denied.status().to_string();
  expect_has(denied.status(), "Permission denied");
}

// check_regular_file: read_regular_file's verdicts without the read (what bench's up-front checks use).
TEST(CheckRegularFile, SameVerdictsAsTheReader) {
  test::TempDir dir;
  test::write_file(dir.file("ok.onnx"), "x");
  EXPECT_TRUE(check_regular_file(dir.file("ok.onnx"), "--model file").is_ok());
  const Status missing = check_regular_file(dir.file("absent.onnx"), "--model file");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  expect_has(missing, "absent.onnx: cannot open the --model file (No such file or directory)");
  const Status folder = check_regular_file(dir.path().string(), "--model file");
  EXPECT_EQ(folder.code(), StatusCode::kInvalidArgument);
  expect_has(folder, "is a directory, not a regular file (expected the --model file)");
  const std::string fifo = dir.file("fifo.onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const Status f = check_regular_file(fifo, "--model file");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(f.code(), StatusCode::kInvalidArgument);
  expect_has(f, "not a regular file (a FIFO; expected the --model file)");
  const Status too_long = check_regular_file(dir.file(std::string(300, 'm')), "--model file");
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  expect_has(too_long, "File name too long");
}

// write_file to a FIFO: with no reader it is refused at once (it used to block forever: `make-demo-model FIFO`);
// with a reader (a shell's >(...)) the bytes arrive.
TEST(WriteFile, FifoWithoutReaderIsRefusedWithReaderIsWritten) {
  test::TempDir dir;
  const std::string fifo = dir.file("out.onnx");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = std::chrono::steady_clock::now();
  const Status none = ws::write_file(fifo, "abc", 3, "model file");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(none.code(), StatusCode::kFailedPrecondition) << none.to_string();
  expect_has(none, "is a FIFO with no reader");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the reader: exit 0 iff it read exactly "abc" then EOF
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    char buf[8] = {};
    size_t got = 0;
    for (ssize_t n; (n = ::read(fd, buf + got, sizeof(buf) - got)) > 0;) got += static_cast<size_t>(n);
    ::_exit(got == 3 && std::string(buf, 3) == "abc" ? 0 : 1);
  }
  Status written = failed_precondition("not tried");
  for (int i = 0; i < 200; ++i) {  // until the child has opened its end (ENXIO before)
    written = ws::write_file(fifo, "abc", 3, "model file");
    if (written.is_ok()) break;
    ::usleep(10000);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  EXPECT_TRUE(written.is_ok()) << written.to_string();
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "the reader did not get the bytes";
  const Status too_long = ws::write_file(dir.file(std::string(300, 'w')), "x", 1, "report JSON");
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument) << too_long.to_string();
}

TEST(ReadRegularFile, SizeBoundAndContent) {
  test::TempDir dir;
  test::write_file(dir.file("a"), "0123456789");
  auto big = read_regular_file(dir.file("a"), "config file", 9);
  ASSERT_FALSE(big.is_ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  expect_has(big.status(), "10 bytes, over the 9-byte limit");
  auto ok = read_regular_file(dir.file("a"), "config file", 10);
  ASSERT_TRUE(ok.is_ok());
  EXPECT_EQ(std::string(ok->begin(), ok->end()), "0123456789");
}

TEST(SafetensorsOpen, FifoShardRefusedNotBlocking) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo(dir.file("shard.safetensors").c_str(), 0600), 0);
  test::write_file(dir.file("diffusion_pytorch_model.safetensors.index.json"),
                   R"({"weight_map": {"x": "shard.safetensors"}})");
  const auto t0 = std::chrono::steady_clock::now();
  auto ck = io::open_checkpoint(dir.path().string());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ASSERT_FALSE(ck.is_ok());
  expect_has(ck.status(), "not a regular file");
  auto f = io::SafetensorsFile::open(dir.file("shard.safetensors"));
  ASSERT_FALSE(f.is_ok());
  expect_has(f.status(), "not a regular file");
}

TEST(SafetensorsOpen, FifoConfigBesideACheckpointRefused) {
  test::TempDir dir;
  test::write_file(dir.file("model.safetensors"), test::safetensors_image({{"x", "F32", {1}, test::f32_bytes({1})}}));
  ASSERT_EQ(::mkfifo(dir.file("config.json").c_str(), 0600), 0);
  // A config.json that is present but not a regular file is refused (not skipped: defaults would be used silently).
  const auto t0 = std::chrono::steady_clock::now();
  auto ck = io::open_checkpoint(dir.path().string());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  ASSERT_FALSE(ck.is_ok());
  expect_has(ck.status(), "config.json: is not a regular file (a FIFO");
}

}  // namespace
}  // namespace ws
