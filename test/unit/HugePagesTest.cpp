//===- HugePagesTest.cpp - model support: buffers and weights on 2 MiB pages -//

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

// Linked in from mcc_model_support (C, hidden in a model .so).
extern "C" {
void *mcc_huge_alloc(size_t bytes);
const void *mcc_weights_resident(const void *data, size_t bytes,
                                 int releaseSource);
void *_mlir_memref_to_llvm_alloc(size_t size);
void _mlir_memref_to_llvm_free(void *p);
}

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

bool hugePagesOffered() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return f.good() && mode.find("[never]") == std::string::npos;
}

/// The VmFlags of the mapping that holds `p` ("hg": MADV_HUGEPAGE), or ""
/// where /proc/self/smaps has no mapping holding it.
std::string vmFlagsOf(const void *p) {
  std::ifstream smaps("/proc/self/smaps");
  auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin, end;
    char dash;
    std::istringstream range(line);
    if (range >> std::hex >> begin >> dash >> end && dash == '-' &&
        line.find(':') > line.find(' ')) {
      inside = at >= begin && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

bool advisedHuge(const void *p) {
  std::string flags = vmFlagsOf(p);
  return flags.find(" hg") != std::string::npos;
}

TEST(HugePagesTest, LargeAllocationsAreAlignedAndAdvised) {
  void *p = mcc_huge_alloc(3 * kHugePage + 64);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u);
  std::memset(p, 1, 3 * kHugePage + 64); // all of it is usable
  EXPECT_TRUE(advisedHuge(p)) << vmFlagsOf(p);
  std::free(p);
}

TEST(HugePagesTest, BufferCacheServesLargeBlocksFromHugePages) {
  // 784 KiB: a 64-channel 56 x 56 image.
  size_t bytes = 64 * 56 * 56 * 4;
  auto *big = static_cast<char *>(_mlir_memref_to_llvm_alloc(bytes));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % 64, 0u);
  std::memset(big, 2, bytes);
  EXPECT_TRUE(advisedHuge(big)) << vmFlagsOf(big);
  auto *small = static_cast<char *>(_mlir_memref_to_llvm_alloc(4096));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
  // Freed blocks come back for the same size (the next run's request).
  _mlir_memref_to_llvm_free(big);
  EXPECT_EQ(_mlir_memref_to_llvm_alloc(bytes), big);
  _mlir_memref_to_llvm_free(big);
  _mlir_memref_to_llvm_free(small);
}

// The tiles of a parallel loop allocate and free at the same moment: the
// cache hands no block to two threads at once, and gives every thread back
// blocks of the size it asked for, small ones (kept per thread) and ones
// past 64 KiB (kept for all threads).
TEST(HugePagesTest, BufferCacheIsSharedSafelyByThreads) {
  auto work = [](unsigned id, bool *ok) {
    for (int i = 0; i < 20000; ++i) {
      size_t bytes =
          64 + 64 * ((i + id) % 7) + (i % 2 ? (size_t(80) << 10) : 0);
      auto *p = static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(bytes));
      if (!p) {
        *ok = false;
        return;
      }
      std::memset(p, static_cast<int>(id), bytes);
      for (size_t b = 0; b < bytes; b += 61)
        if (p[b] != id)
          *ok = false;
      _mlir_memref_to_llvm_free(p);
    }
  };
  bool ok[4] = {true, true, true, true};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t)
    threads.emplace_back(work, t + 1, &ok[t]);
  for (std::thread &t : threads)
    t.join();
  for (bool each : ok)
    EXPECT_TRUE(each);
}

// One test: mcc_weights_resident keeps one blob per model library.
TEST(HugePagesTest, WeightsAreCopiedOnceOntoHugePages) {
  if (!hugePagesOffered())
    GTEST_SKIP() << "transparent huge pages are off on this machine";
  size_t bytes = 2 * kHugePage + 4096;
  // A blob mapped like a weights file, released after the copy.
  void *mapped = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  std::vector<float> pattern(bytes / 4);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = 0.5f * static_cast<float>(i % 1013);
  std::memcpy(mapped, pattern.data(), bytes);

  ::unsetenv("MCC_MAP_WEIGHTS");
  const void *resident = mcc_weights_resident(mapped, bytes, 1);
  ASSERT_NE(resident, mapped);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(resident) % kHugePage, 0u);
  EXPECT_EQ(std::memcmp(resident, pattern.data(), bytes), 0);
  EXPECT_TRUE(advisedHuge(resident)) << vmFlagsOf(resident);
  // The file mapping is gone; asking again gives the same copy.
  EXPECT_EQ(vmFlagsOf(mapped), "");
  EXPECT_EQ(mcc_weights_resident(mapped, bytes, 1), resident);

  // MCC_MAP_WEIGHTS=1 keeps the blob where it is mapped.
  std::vector<float> other(pattern);
  ::setenv("MCC_MAP_WEIGHTS", "1", 1);
  EXPECT_EQ(mcc_weights_resident(other.data(), bytes, 0), other.data());
  ::unsetenv("MCC_MAP_WEIGHTS");

  // A blob under one huge page is read in place.
  std::vector<float> small(1024, 3.0f);
  EXPECT_EQ(mcc_weights_resident(small.data(), small.size() * 4, 0),
            small.data());
}

} // namespace
