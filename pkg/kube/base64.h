// File: base64.h
//
// Standard-alphabet base64 (RFC 4648 §4) for kubeconfig `*-data` fields and the cluster info
// handed to exec plugins. Decoding is lenient about layout (whitespace, line breaks, missing
// padding), because people paste PEM bundles by hand, and strict about content.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace egress::kube {

// The decoded bytes, or nullopt if `text` holds a character outside the alphabet, misplaced
// padding, or a length no encoder could have produced.
std::optional<std::string> base64Decode(std::string_view text);

// Padded, no line breaks.
std::string base64Encode(std::string_view bytes);

}  // namespace egress::kube
