// ipam_bench: pkg/ipam allocation speed and memory, for an IPv4 /16 and an IPv6 /64 pool.
//
//   ipam_bench [--allocations 10000] [--rounds 11]
//
// Each round builds a fresh pool and allocates `allocations` addresses one call at a time, two
// per owner ("namespace-N/policy-N", like a policy with two gateway replicas), the lowest free
// address each time. Allocations per second is the median round's; bytes per allocation is the
// growth of the heap in use (mallinfo2: arenas and mmap()ed blocks, so malloc's own overhead
// counts) from before the pool was built to after the last allocation of the first round,
// divided by the allocations. Owner names are made before the measurement; the pool's copies of
// them count.
//
// Output per pool: one line of text, then one JSON object per figure.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "pkg/cli/flag_set.h"
#include "pkg/ipam/pool.h"
#include <malloc.h>

namespace {

using egress::ipam::Family;
using egress::ipam::Pool;

struct Figures {
  double allocationsPerSecond = 0;
  double bytesPerAllocation = 0;
};

// Bytes malloc has handed out: from its arenas, and mmap()ed blocks (large vectors) apart.
size_t heapInUse() {
  const auto info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Allocates one address per call for owners[i / 2]; false if the pool refused one.
bool fill(Pool& pool, Family family, const std::vector<std::string>& owners, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (!pool.allocate(owners[i / 2], family, 1)) {
      return false;
    }
  }
  return true;
}

bool measure(const std::string& cidr, Family family, int64_t allocations, int64_t rounds,
             Figures& out) {
  std::vector<std::string> owners;
  for (int64_t i = 0; i < (allocations + 1) / 2; ++i) {
    owners.push_back("namespace-" + std::to_string(i) + "/policy-" + std::to_string(i));
  }
  std::vector<double> seconds;
  for (int64_t round = 0; round < rounds; ++round) {
    const size_t heapBefore = heapInUse();
    auto pool = Pool::create({cidr}, {});
    if (!pool) {
      std::fprintf(stderr, "ipam_bench: %s\n", pool.error().message.c_str());
      return false;
    }
    const auto start = std::chrono::steady_clock::now();
    if (!fill(*pool, family, owners, allocations)) {
      std::fprintf(stderr, "ipam_bench: %s ran out of addresses\n", cidr.c_str());
      return false;
    }
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (round == 0) {
      out.bytesPerAllocation =
          static_cast<double>(heapInUse() - heapBefore) / static_cast<double>(allocations);
    }
  }
  std::sort(seconds.begin(), seconds.end());
  out.allocationsPerSecond = static_cast<double>(allocations) / seconds[seconds.size() / 2];
  return true;
}

void json(const std::string& cidr, int64_t allocations, const char* metric, double value,
          const char* unit) {
  std::printf(R"({"benchmark":"ipam","pool":"%s","allocations":%lld,"metric":"%s",)"
              R"("value":%.1f,"unit":"%s"})"
              "\n",
              cidr.c_str(), static_cast<long long>(allocations), metric, value, unit);
}

void report(const std::string& cidr, int64_t allocations, const Figures& f) {
  std::printf("ipam pool=%s allocations=%lld allocations_per_s=%.0f bytes_per_allocation=%.1f\n",
              cidr.c_str(), static_cast<long long>(allocations), f.allocationsPerSecond,
              f.bytesPerAllocation);
  json(cidr, allocations, "allocations_per_second", f.allocationsPerSecond, "1/s");
  json(cidr, allocations, "bytes_per_allocation", f.bytesPerAllocation, "B");
}

}  // namespace

int main(int argc, char** argv) {
  egress::cli::FlagSet flags("ipam_bench");
  int64_t allocations = 10000;
  int64_t rounds = 11;
  bool help = false;
  flags.addInt("allocations", allocations, "Addresses to allocate from each pool.");
  flags.addInt("rounds", rounds, "Fresh pools to time; the median counts.");
  flags.addBool("help", help, "Print this help.");
  if (auto err = flags.parse(argc, argv); !err.empty() || help || allocations < 1 || rounds < 1) {
    std::fprintf(help ? stdout : stderr, "%s\n%s", err.c_str(), flags.usage().c_str());
    return help ? 0 : 2;
  }
  const struct {
    const char* cidr;
    Family family;
  } pools[] = {{"10.0.0.0/16", Family::kIPv4}, {"2001:db8::/64", Family::kIPv6}};
  for (const auto& p : pools) {
    Figures figures;
    if (!measure(p.cidr, p.family, allocations, rounds, figures)) {
      return 1;
    }
    report(p.cidr, allocations, figures);
  }
  return 0;
}
