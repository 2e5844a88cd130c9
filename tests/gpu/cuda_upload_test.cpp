// ws::cuda::copy_to_device / fill_device (src/cuda/cuda_util.h): work enqueued right after them on a
// cudaStreamNonBlocking stream sees every byte. A plain cudaMemcpy from pageable memory returns once the data is
// staged, before its DMA (on the legacy stream) lands, and cudaMemset is asynchronous there; a non-blocking stream
// does not wait for either (four torchvision zoo models gave wrong logits on a busy H200 and matched on an idle one,
// device runs 18 and 19 of 2026-12-02: the cause found in the code). The check kernel runs on a non-blocking stream
// the instant the call returns, over a buffer large
// enough (256 MiB) that a copy still in flight would leave its tail unwritten. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_util.h"
#include "device_test_kernels.h"
#include "support/cuda_check.h"
#include "support/seed.h"

namespace ws {
namespace {

constexpr size_t kWords = size_t{64} << 20;  // 256 MiB of uint32

unsigned long long mismatches_now(const cuda::DeviceBuffer& buf, uint32_t seed, cuda::Stream& stream, unsigned long long* dcount) {
  unsigned long long h = ~0ull;
  EXPECT_EQ(cudaMemsetAsync(dcount, 0, sizeof(*dcount), stream.get()), cudaSuccess);
  EXPECT_EQ(test::count_pattern_mismatches(static_cast<const uint32_t*>(buf.get()), kWords, seed, dcount, stream.get()), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(&h, dcount, sizeof(h), cudaMemcpyDeviceToHost, stream.get()), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(stream.get()), cudaSuccess);
  return h;
}

// 256 MiB device buffer, a device counter and a non-blocking stream (as every stream of ours).
class CudaUpload : public ::testing::Test {
 protected:
  void SetUp() override {
    WS_SKIP_WITHOUT_GPU();
    auto b = cuda::DeviceBuffer::allocate(kWords * 4);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    auto c = cuda::DeviceBuffer::allocate(sizeof(unsigned long long));
    ASSERT_TRUE(c.is_ok()) << c.status().to_string();
    auto s = cuda::Stream::create();
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    buf_ = std::move(b).value();
    count_ = std::move(c).value();
    stream_ = std::move(s).value();
  }
  unsigned long long mismatches(uint32_t seed) {
    return mismatches_now(buf_, seed, stream_, static_cast<unsigned long long*>(count_.get()));
  }
  cuda::DeviceBuffer buf_, count_;
  cuda::Stream stream_;
};

TEST_F(CudaUpload, PageableCopyLandsBeforeNonBlockingStreamWork) {
  std::vector<uint32_t> host(kWords);  // pageable
  for (int round = 0; round < 3; ++round) {
    const uint32_t seed = test::test_seed("upload round " + std::to_string(round));
    for (size_t i = 0; i < kWords; ++i) host[i] = test::upload_pattern(i, seed);
    ASSERT_TRUE(cuda::fill_device(buf_.get(), 0, kWords * 4).is_ok());
    const Status s = cuda::copy_to_device(buf_.get(), host.data(), kWords * 4);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    EXPECT_EQ(mismatches(seed), 0ull)
        << "words a kernel on a non-blocking stream saw before the upload landed (round " << round << ")";
  }
}

TEST_F(CudaUpload, FillLandsBeforeNonBlockingStreamWork) {
  // Upload the pattern, then fill every byte with 0xAB: a kernel right after must see no word of the pattern left.
  const uint32_t seed = test::test_seed("fill");
  std::vector<uint32_t> host(kWords);
  for (size_t i = 0; i < kWords; ++i) host[i] = test::upload_pattern(i, seed);
  ASSERT_TRUE(cuda::copy_to_device(buf_.get(), host.data(), kWords * 4).is_ok());
  ASSERT_EQ(mismatches(seed), 0ull);
  ASSERT_TRUE(cuda::fill_device(buf_.get(), 0xAB, kWords * 4).is_ok());
  // After the fill no word may still hold the pattern: count the words that still equal it (mismatches = all).
  EXPECT_EQ(mismatches(seed),
            static_cast<unsigned long long>(kWords) - std::count(host.begin(), host.end(), 0xABABABABu))
      << "words a kernel on a non-blocking stream saw before the fill landed";
}

}  // namespace
}  // namespace ws
