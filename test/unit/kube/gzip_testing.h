// File: gzip_testing.h
//
// gzip compression for tests of the decoders: the API server's Content-Encoding: gzip bodies,
// made with zlib as Go's gzip writer would make them.
#pragma once

#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include <zlib.h>

namespace egress::kube::testing {

// One gzip member holding `data`.
inline std::string gzipped(std::string_view data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace egress::kube::testing
