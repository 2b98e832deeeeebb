// File: ipam_fuzz.cc
//
// libFuzzer target for pkg/ipam (`make fuzz`, hack/fuzz.sh). The first input byte picks the
// mode (modulo 3):
//   - 0: the rest is text. Parsing never crashes; an address or CIDR that parses prints as
//     text that parses back to the same value; Pool::create over it as a CIDR and as an
//     exclusion never crashes, and its counts are consistent (0 <= allocated <= total,
//     free = total - allocated below saturation).
//   - 1: the rest are the choices of an operation sequence (allocate, reserve, release,
//     releaseAll, restore, rebuild) run on a Pool and on a brute-force model
//     (test/unit/ipam/model_check.h), as the randomized unit test does with seeds. Any
//     difference in a result, a conflict, a count or the ledger is a finding.
//   - 2: the next four bytes seed the randomized unit test's generator for 1000 steps: the
//     states that take hundreds of steps to build, which byte-driven runs from an empty corpus
//     rarely reach.
// A violation prints what went wrong on stderr and aborts (libFuzzer then writes the input as
// a crash artifact).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "pkg/ipam/address.h"
#include "pkg/ipam/pool.h"
#include "test/unit/ipam/model_check.h"

namespace {

namespace ipam = egress::ipam;

[[noreturn]] void fail(const std::string& what, std::string_view input) {
  std::fprintf(stderr, "ipam_fuzz: %s\n  input: %.*s\n", what.c_str(),
               static_cast<int>(input.size()), input.data());
  std::abort();
}

void checkCounts(const ipam::Pool& pool, std::string_view input) {
  for (auto family : {ipam::Family::kIPv4, ipam::Family::kIPv6}) {
    const auto c = pool.counts(family);
    const bool saturated = c.total == ipam::FamilyCounts::kMax;
    if (c.total < 0 || c.allocated < 0 || c.allocated > c.total || c.outside != 0 ||
        (!saturated && c.free != c.total - c.allocated) || (!pool.hasFamily(family) && c.total)) {
      fail("inconsistent counts", input);
    }
  }
}

void checkText(std::string_view text) {
  if (auto a = ipam::parseAddress(text)) {
    const std::string printed = a->toString();
    auto again = ipam::parseAddress(printed);
    if (!again || *again != *a) {
      fail("address does not survive printing: " + printed, text);
    }
  }
  if (auto p = ipam::parseAddressOrCIDR(text)) {
    const std::string printed = p->toString();
    auto again = ipam::parseCIDR(printed);
    if (!again || *again != *p || p->last() < p->first()) {
      fail("prefix does not survive printing: " + printed, text);
    }
  }
  const std::string s(text);
  if (auto pool = ipam::Pool::create({s}, {}); pool) {
    checkCounts(*pool, text);
    if (auto excluded = ipam::Pool::create({s}, {s});
        !excluded || excluded->counts(ipam::Family::kIPv4).total != 0 ||
        excluded->counts(ipam::Family::kIPv6).total != 0) {
      fail("a CIDR excluded from itself leaves addresses", text);
    }
  }
}

}  // namespace

// NOLINTNEXTLINE(readability-identifier-naming): libFuzzer's entry point
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  std::optional<std::string> difference;
  if (data[0] % 3 == 0) {
    checkText(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
    return 0;
  }
  if (data[0] % 3 == 1) {
    ipam::testing::ByteChoices choices(data + 1, size - 1);
    difference = ipam::testing::checkAgainstModel(choices, 2000);
  } else {
    uint32_t seed = 0;
    std::memcpy(&seed, data + 1, std::min<size_t>(size - 1, sizeof seed));
    ipam::testing::SeededChoices choices(seed);
    difference = ipam::testing::checkAgainstModel(choices, 1000);
  }
  if (difference) {
    std::fprintf(stderr, "ipam_fuzz: pool and model differ: %s\n", difference->c_str());
    std::abort();
  }
  return 0;
}
