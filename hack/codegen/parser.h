// File: parser.h
//
// Reads an API package's types.h with a small, strict grammar (documented in
// pkg/apis/networking/v1alpha1/types.h): comments, `// +markers`, `struct X {` ... `};`, fields
// `Type name;` or `Type name = init;`, and defaulted `operator==`. Anything else inside a struct,
// an unknown type or an unknown marker is an error naming the file and line, so a typo cannot
// silently drop a field from the codecs or the CRD.
#pragma once

#include <string>
#include <variant>

#include "hack/codegen/model.h"

namespace egress::codegen {

struct ParseError {
  std::string message;  // "types.h:42: unknown type 'std::list<int>'"
};

std::variant<Package, ParseError> parsePackage(const std::string& text, const std::string& file,
                                               const std::string& includePath);

}  // namespace egress::codegen
