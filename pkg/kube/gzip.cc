#include "pkg/kube/gzip.h"

#include <zlib.h>

namespace egress::kube {
namespace {

Error corrupt(const std::string& why) {
  return Error::decode("gzip-encoded response body: " + why);
}

// zlib's stream, ended on every path out.
class Inflater {
 public:
  Inflater() { ok_ = inflateInit2(&z_, 15 + 16) == Z_OK; }  // 16: gzip framing only
  ~Inflater() {
    if (ok_) {
      inflateEnd(&z_);
    }
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  bool ok() const { return ok_; }
  z_stream& z() { return z_; }

 private:
  z_stream z_{};
  bool ok_ = false;
};

}  // namespace

Result<std::string> gunzip(std::string_view compressed, size_t maxBytes) {
  Inflater inflater;
  if (!inflater.ok()) {
    return corrupt("zlib could not start");
  }
  z_stream& z = inflater.z();
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  z.avail_in = static_cast<uInt>(compressed.size());
  std::string out;
  // Compressed JSON is typically 8-12 times smaller: start there and grow.
  out.resize(std::min(maxBytes, std::max<size_t>(compressed.size() * 8, 4096)));
  size_t produced = 0;
  for (;;) {
    if (produced == out.size()) {
      if (out.size() >= maxBytes) {
        return corrupt("more than " + std::to_string(maxBytes) + " bytes once decompressed");
      }
      out.resize(std::min(maxBytes, out.size() * 2));
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    z.avail_out = static_cast<uInt>(out.size() - produced);
    const int rc = inflate(&z, Z_NO_FLUSH);
    produced = out.size() - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) {
        break;
      }
      // Another gzip member follows (concatenated streams are one body, as for Go); anything
      // else fails in the next inflate() as a bad header.
      if (inflateReset(&z) != Z_OK) {
        return corrupt("zlib could not restart");
      }
      continue;
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      return corrupt("truncated");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return corrupt(z.msg != nullptr ? z.msg : "corrupt data");
    }
  }
  out.resize(produced);
  return out;
}

}  // namespace egress::kube
