// File: gzip.h
//
// Decompression of gzip-encoded response bodies (Content-Encoding: gzip), with zlib. The API
// server compresses large responses (a 10,000-pod LIST shrinks about thirtyfold) when the request
// says Accept-Encoding: gzip, as Go's transport does by default (client-go's
// DisableCompression turns it off). GunzipReader hands the output out a chunk at a time, so that
// a large LIST is decoded item by item without ever being whole in memory (list_page.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "pkg/kube/errors.h"

namespace egress::kube {

// Decompresses one or more concatenated gzip members (RFC 1952), as Go's gzip reader accepts
// them, chunk by chunk. read() returns the next chunk (valid until the next read()), empty at the
// end. A Decode error, returned again by every later read(), for anything else: a corrupt or
// truncated stream, trailing bytes that are not another member, or more than maxBytes of output.
// `compressed` must outlive the reader.
class GunzipReader {
 public:
  GunzipReader(std::string_view compressed, size_t maxBytes, size_t chunkBytes = 64 * 1024);
  ~GunzipReader();
  GunzipReader(GunzipReader&&) noexcept;
  GunzipReader& operator=(GunzipReader&&) noexcept;

  Result<std::string_view> read();
  // Decompressed bytes handed out so far.
  size_t produced() const;

 private:
  // zlib's stream points back at itself: it lives on the heap and never moves.
  struct State;
  std::unique_ptr<State> state_;
};

// The whole decompressed body, with GunzipReader's errors.
Result<std::string> gunzip(std::string_view compressed, size_t maxBytes);

}  // namespace egress::kube
