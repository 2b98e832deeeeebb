#include "test/bench/bench_util.h"

#include <cerrno>
#include <cstdlib>

#include <boost/asio/co_spawn.hpp>

#include <malloc.h>

#if defined(__SANITIZE_ADDRESS__)
#define EGRESS_COUNT_HEAP 0
#else
#define EGRESS_COUNT_HEAP 1
#endif

#if EGRESS_COUNT_HEAP
// glibc's own entry points: the definitions below take the public names and count.
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming): glibc's names
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* ptr);
}
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)

namespace {

// Plain thread_locals of trivial type: static TLS of the executable, never allocated.
thread_local uint64_t tAllocations = 0;
thread_local uint64_t tAllocatedBytes = 0;
thread_local int64_t tLiveBytes = 0;

void* counted(void* p) {
  if (p != nullptr) {
    const size_t n = malloc_usable_size(p);
    ++tAllocations;
    tAllocatedBytes += n;
    tLiveBytes += static_cast<int64_t>(n);
  }
  return p;
}

void uncount(void* p) {
  if (p != nullptr) {
    tLiveBytes -= static_cast<int64_t>(malloc_usable_size(p));
  }
}

}  // namespace

extern "C" {
void* malloc(size_t size) noexcept {
  return counted(__libc_malloc(size));
}
void* calloc(size_t count, size_t size) noexcept {
  return counted(__libc_calloc(count, size));
}
void* realloc(void* ptr, size_t size) noexcept {
  uncount(ptr);
  void* p = __libc_realloc(ptr, size);
  if (p == nullptr && size != 0) {
    // Failed: the old block is still there.
    tLiveBytes += ptr != nullptr ? static_cast<int64_t>(malloc_usable_size(ptr)) : 0;
    return nullptr;
  }
  return counted(p);
}
void* memalign(size_t alignment, size_t size) noexcept {
  return counted(__libc_memalign(alignment, size));
}
void* aligned_alloc(size_t alignment, size_t size) noexcept {
  return counted(__libc_memalign(alignment, size));
}
int posix_memalign(void** out, size_t alignment, size_t size) noexcept {
  void* p = counted(__libc_memalign(alignment, size));
  if (p == nullptr) {
    return ENOMEM;
  }
  *out = p;
  return 0;
}
void free(void* ptr) noexcept {
  uncount(ptr);
  __libc_free(ptr);
}
}
#endif

namespace egress::bench {
namespace {

boost::asio::awaitable<void> createRange(kube::RestClient* client, std::string ns, int from, int to,
                                         int* failures, int* done) {
  for (int i = from; i < to; ++i) {
    std::string body = benchPod("bench-" + std::to_string(i));
    auto r = co_await client->create(kPods, ns, std::move(body));
    if (!r && !r.error().isAlreadyExists()) {
      ++*failures;
      std::fprintf(stderr, "create bench-%d: %s\n", i, r.error().message().c_str());
    }
  }
  ++*done;
}

void rethrow(const std::exception_ptr& e) {
  if (e) {
    std::rethrow_exception(e);
  }
}

}  // namespace

HeapStats threadHeapStats() {
#if EGRESS_COUNT_HEAP
  return {tAllocations, tAllocatedBytes, tLiveBytes};
#else
  return {};
#endif
}

bool heapCountingEnabled() {
  return EGRESS_COUNT_HEAP != 0;
}

bool createPods(boost::asio::io_context& ioc, kube::RestClient& client, const std::string& ns,
                int count, int parallel) {
  int failures = 0;
  int done = 0;
  const int per = (count + parallel - 1) / parallel;
  for (int p = 0; p < parallel; ++p) {
    const int from = p * per;
    const int to = std::min(count, from + per);
    boost::asio::co_spawn(ioc, createRange(&client, ns, from, to, &failures, &done), rethrow);
  }
  while (done < parallel) {
    if (ioc.run_one() == 0) {
      ioc.restart();  // it ran out of work before we spawned ours; not an error
    }
  }
  return failures == 0;
}

}  // namespace egress::bench
