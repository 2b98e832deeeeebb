// File: decode_fuzz.cc
//
// libFuzzer target for the generated networking/v1alpha1 JSON codecs (`make fuzz`, hack/fuzz.sh).
// The first input byte picks the kind (0: IPAMPool, 1: EgressGatewayPolicy, 2: OperatorConfig,
// modulo 3), the rest is the JSON. Checked, on any input:
//   - decoding never crashes (ASan/UBSan watch it), and a decode error always has a message;
//   - a decoded object survives the codec: decode -> encode -> decode (= A) -> encode -> decode
//     (= B) gives A == B with byte-identical encodings, and A is the first decode with only what
//     the encoders drop by design removed (server-set metadata, sub-second condition times);
//   - validate() never crashes and every FieldError it returns has a path or a message.
// A violation prints what went wrong and the JSON involved on stderr and aborts.
//
// RapidJSON 1.1.0 under C++20 recurses forever on `Value == number`: nothing here compares
// rapidjson Values, only the typed objects (their defaulted operator==) and strings.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "pkg/apis/meta/condition.h"
#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"
#include "pkg/apis/meta/time.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/apis/networking/v1alpha1/validation.h"
#include "pkg/apis/networking/v1alpha1/zz_generated.codec.h"
#include "pkg/apis/validation/field_error.h"

namespace {

namespace meta = egress::meta;
namespace v1 = egress::networking::v1alpha1;

void print(std::string_view label, std::string_view text) {
  std::fprintf(stderr, "  %.*s: %.*s\n", static_cast<int>(label.size()), label.data(),
               static_cast<int>(text.size()), text.data());
}

// Reports a violated property with the two texts that show it, and aborts (libFuzzer then
// writes the input as a crash artifact).
[[noreturn]] void fail(std::string_view kind, std::string_view what, std::string_view label1,
                       std::string_view text1, std::string_view label2, std::string_view text2) {
  std::fprintf(stderr, "decode_fuzz: %.*s: %.*s\n", static_cast<int>(kind.size()), kind.data(),
               static_cast<int>(what.size()), what.data());
  print(label1, text1);
  print(label2, text2);
  std::abort();
}

// What the first encode loses on purpose: encodeObjectMeta writes only the client-settable
// fields, and conditions' lastTransitionTime is a metav1.Time (whole seconds).
void dropConditionSubseconds(std::vector<meta::Condition>& conditions) {
  for (auto& c : conditions) {
    c.lastTransitionTime = meta::truncateToSeconds(c.lastTransitionTime);
  }
}

template <class T>
T normalized(T obj) {
  obj.metadata.generation = 0;
  obj.metadata.creationTimestamp = meta::Time{};
  obj.metadata.deletionTimestamp.reset();
  dropConditionSubseconds(obj.status.conditions);
  return obj;
}

template <class Decode, class Encode>
void check(std::string_view kind, std::string_view json, Decode decode, Encode encode) {
  auto first = meta::parseAndDecode(json, decode);
  if (!first) {
    if (first.error().message.empty()) {
      fail(kind, "decode error without a message", "input", json, "error path", first.error().path);
    }
    return;
  }

  const egress::validation::FieldErrors errors = v1::validate(*first);
  for (const auto& err : errors) {
    if (err.path.empty() && err.message.empty()) {
      fail(kind, "validate() returned a FieldError with neither path nor message", "input", json,
           "errors", egress::validation::join(errors));
    }
  }

  const std::string encoded1 = meta::encodeToString(*first, encode);
  auto a = meta::parseAndDecode(encoded1, decode);
  if (!a) {
    fail(kind, "its own encoding does not decode", "encoding", encoded1, "error",
         a.error().toString());
  }
  const std::string encoded2 = meta::encodeToString(*a, encode);
  auto b = meta::parseAndDecode(encoded2, decode);
  if (!b) {
    fail(kind, "its own encoding does not decode (second round)", "encoding", encoded2, "error",
         b.error().toString());
  }
  if (!(*a == *b)) {
    fail(kind, "decode(encode(A)) != A", "encode(decode(input))", encoded1, "encode(A)", encoded2);
  }
  if (encoded1 != encoded2) {
    fail(kind, "encoding is not stable: encode(decode(encode(x))) != encode(x)", "encode(x)",
         encoded1, "encode(decode(encode(x)))", encoded2);
  }
  if (!(normalized(*first) == *a)) {
    fail(kind, "the first encode lost a field the encoders should keep", "input", json,
         "encode(decode(input))", encoded1);
  }
}

}  // namespace

// libFuzzer's entry point, named by libFuzzer.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view json(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      check("IPAMPool", json, v1::decodeIPAMPool, v1::encodeIPAMPool);
      break;
    case 1:
      check("EgressGatewayPolicy", json, v1::decodeEgressGatewayPolicy,
            v1::encodeEgressGatewayPolicy);
      break;
    default:
      check("OperatorConfig", json, v1::decodeOperatorConfig, v1::encodeOperatorConfig);
      break;
  }
  return 0;
}
