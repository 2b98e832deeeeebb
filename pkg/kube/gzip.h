// File: gzip.h
//
// Decompression of gzip-encoded response bodies (Content-Encoding: gzip), with zlib. The API
// server compresses large responses (a 10,000-pod LIST shrinks about tenfold) when the request
// says Accept-Encoding: gzip, as Go's transport does by default (client-go's
// DisableCompression turns it off).
#pragma once

#include <string>
#include <string_view>

#include "pkg/kube/errors.h"

namespace egress::kube {

// The decompressed bytes of one or more concatenated gzip members (RFC 1952), as Go's gzip
// reader accepts them. A Decode error for anything else: a corrupt or truncated stream,
// trailing bytes that are not another member, or more than maxBytes of output.
Result<std::string> gunzip(std::string_view compressed, size_t maxBytes);

}  // namespace egress::kube
