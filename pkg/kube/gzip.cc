#include "pkg/kube/gzip.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <vector>

#include <zlib.h>

namespace egress::kube {
namespace {

Error corrupt(const std::string& why) {
  return Error::decode("gzip-encoded response body: " + why);
}

}  // namespace

struct GunzipReader::State {
  // zlib counts bytes in a 32-bit uInt: the output chunk stays below that, and the input goes in
  // slices it can count (feed()).
  State(std::string_view compressed, size_t maxBytes, size_t chunkBytes)
      : rest(compressed), maxBytes(maxBytes), out(std::clamp<size_t>(chunkBytes, 1, 1U << 30)) {
    started = inflateInit2(&z, 15 + 16) == Z_OK;  // 16: gzip framing only
  }
  ~State() {
    if (started) {
      inflateEnd(&z);
    }
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  void feed() {
    if (z.avail_in == 0 && !rest.empty()) {
      const size_t n = std::min<size_t>(rest.size(), std::numeric_limits<uInt>::max());
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest.data()));
      z.avail_in = static_cast<uInt>(n);
      rest.remove_prefix(n);
    }
  }
  bool inputLeft() const { return z.avail_in != 0 || !rest.empty(); }

  z_stream z{};
  std::string_view rest;  // input not yet handed to zlib
  bool started = false;
  bool ended = false;
  size_t maxBytes;
  size_t produced = 0;
  std::vector<char> out;
  std::optional<Error> error;
};

GunzipReader::GunzipReader(std::string_view compressed, size_t maxBytes, size_t chunkBytes)
    : state_(std::make_unique<State>(compressed, maxBytes, chunkBytes)) {
  if (!state_->started) {
    state_->error = corrupt("zlib could not start");
  }
}

GunzipReader::~GunzipReader() = default;
GunzipReader::GunzipReader(GunzipReader&&) noexcept = default;
GunzipReader& GunzipReader::operator=(GunzipReader&&) noexcept = default;

size_t GunzipReader::produced() const {
  return state_->produced;
}

Result<std::string_view> GunzipReader::read() {
  State& s = *state_;
  if (s.error) {
    return *s.error;
  }
  z_stream& z = s.z;
  while (!s.ended) {
    s.feed();
    z.next_out = reinterpret_cast<Bytef*>(s.out.data());
    z.avail_out = static_cast<uInt>(s.out.size());
    const int rc = inflate(&z, Z_NO_FLUSH);
    const size_t n = s.out.size() - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (!s.inputLeft()) {
        s.ended = true;
      } else if (inflateReset(&z) != Z_OK) {
        // Another gzip member follows (concatenated streams are one body, as for Go); anything
        // else fails in the next inflate() as a bad header.
        s.error = corrupt("zlib could not restart");
      }
    } else if (rc == Z_BUF_ERROR && !s.inputLeft()) {
      s.error = corrupt("truncated");
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      s.error = corrupt(z.msg != nullptr ? z.msg : "corrupt data");
    }
    if (!s.error && s.produced + n > s.maxBytes) {
      s.error = corrupt("more than " + std::to_string(s.maxBytes) + " bytes once decompressed");
    }
    if (s.error) {
      return *s.error;
    }
    s.produced += n;
    if (n > 0) {
      return std::string_view(s.out.data(), n);
    }
  }
  return std::string_view();
}

Result<std::string> gunzip(std::string_view compressed, size_t maxBytes) {
  // Compressed JSON is typically 8-30 times smaller: reserve the low end and grow from there.
  std::string out;
  out.reserve(std::min(maxBytes, std::max<size_t>(compressed.size() * 8, 4096)));
  GunzipReader reader(compressed, maxBytes);
  for (;;) {
    auto chunk = reader.read();
    if (!chunk) {
      return chunk.error();
    }
    if (chunk->empty()) {
      return out;
    }
    out.append(*chunk);
  }
}

}  // namespace egress::kube
