#include "pkg/kube/base64.h"

#include <array>
#include <cstdint>

namespace egress::kube {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr int8_t kInvalid = -1;
constexpr int8_t kSkip = -2;

constexpr std::array<int8_t, 256> makeTable() {
  std::array<int8_t, 256> table{};
  for (auto& v : table) {
    v = kInvalid;
  }
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  for (char c : {' ', '\t', '\r', '\n', '\v', '\f'}) {
    table[static_cast<unsigned char>(c)] = kSkip;
  }
  return table;
}
constexpr std::array<int8_t, 256> kTable = makeTable();

}  // namespace

std::optional<std::string> base64Decode(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t acc = 0;
  int sextets = 0;  // in the current quantum
  int padding = 0;
  for (char ch : text) {
    if (ch == '=') {
      ++padding;
      continue;
    }
    const int8_t v = kTable[static_cast<unsigned char>(ch)];
    if (v == kSkip) {
      continue;
    }
    // Data after padding means two encodings were concatenated or the text is corrupt.
    if (v == kInvalid || padding > 0) {
      return std::nullopt;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    if (++sextets == 4) {
      out.push_back(static_cast<char>((acc >> 16) & 0xff));
      out.push_back(static_cast<char>((acc >> 8) & 0xff));
      out.push_back(static_cast<char>(acc & 0xff));
      acc = 0;
      sextets = 0;
    }
  }
  // A final quantum of one sextet carries less than a byte; padding must complete the quantum.
  if (sextets == 1 || (padding > 0 && (sextets == 0 || sextets + padding != 4))) {
    return std::nullopt;
  }
  if (sextets == 2) {
    out.push_back(static_cast<char>((acc >> 4) & 0xff));
  } else if (sextets == 3) {
    out.push_back(static_cast<char>((acc >> 10) & 0xff));
    out.push_back(static_cast<char>((acc >> 2) & 0xff));
  }
  return out;
}

std::string base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest == 1) {
    const uint32_t n = static_cast<uint8_t>(bytes[i]) << 16;
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out += "==";
  } else if (rest == 2) {
    const uint32_t n =
        (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back('=');
  }
  return out;
}

}  // namespace egress::kube
