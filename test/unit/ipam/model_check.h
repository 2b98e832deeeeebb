// File: model_check.h
//
// Differential check of pkg/ipam's Pool against a brute-force model, shared by the randomized
// unit test (fixed seeds) and the libFuzzer target (test/fuzz/ipam_fuzz.cc). Each step picks a
// random operation (allocate, reserve, release, releaseAll, restore, rebuild from a new spec and
// restore the ledger), runs it on both, and compares the result, every conflict, both families'
// counts and the whole ledger. The model enumerates a small universe per family (10.1.2.0/24 and
// 2001:db8::ab00/120, plus a neighbouring block that no CIDR reaches) address by address, with
// its own text formatting, so it shares nothing with Pool but the parser of its inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

namespace egress::ipam::testing {

// Where the random choices come from.
class Choices {
 public:
  virtual ~Choices() = default;
  // A value in [0, n), n > 0.
  virtual uint32_t below(uint32_t n) = 0;
  // True once a finite source has run dry (the run stops there).
  virtual bool exhausted() const { return false; }
};

class SeededChoices : public Choices {
 public:
  explicit SeededChoices(uint32_t seed) : rng_(seed) {}
  uint32_t below(uint32_t n) override { return static_cast<uint32_t>(rng_() % n); }

 private:
  std::mt19937 rng_;
};

// One byte per choice (two when n > 256); zeros once the input is used up.
class ByteChoices : public Choices {
 public:
  ByteChoices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint32_t below(uint32_t n) override {
    uint32_t v = nextByte();
    if (n > 256) {
      v = (v << 8) | nextByte();
    }
    return v % n;
  }
  bool exhausted() const override { return pos_ > size_; }

 private:
  uint32_t nextByte() {
    if (pos_ >= size_) {
      ++pos_;
      return 0;
    }
    return data_[pos_++];
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Runs up to `steps` operations; the first difference between Pool and the model, described
// with the step and the operation, or nothing.
std::optional<std::string> checkAgainstModel(Choices& choices, int steps);

}  // namespace egress::ipam::testing
