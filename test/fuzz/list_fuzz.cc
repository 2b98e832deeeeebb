// File: list_fuzz.cc
//
// libFuzzer target for pkg/kube's item-by-item LIST decoder (ListPage, `make fuzz`,
// hack/fuzz.sh). The first input byte picks the chunk size the body is read in, the rest is the
// response body. Checked, on any input:
//   - the body read in one chunk, read in small chunks, and gzip-compressed (read in small
//     chunks) decodes to the same items, resourceVersion, continue token and error;
//   - against RapidJSON's parse of the whole body (for bodies without NUL bytes): ListPage
//     succeeds exactly when the body is empty or a JSON object whose every "items" member is an
//     array or null, and then, when "items" and "metadata" each appear at most once, its items
//     equal the document's and its resourceVersion and continue token are the metadata's;
//   - the body taken as gzip data (GunzipReader): read in small chunks it gives what gunzip()
//     gives, or the same error; a bound one byte below the output's size fails; and the body
//     split in two gzip members decompresses to the body.
// A violation prints what went wrong on stderr and aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/kube/gzip.h"
#include "pkg/kube/list_page.h"
#include <zlib.h>

namespace {

namespace kube = egress::kube;

[[noreturn]] void fail(std::string_view what, std::string_view body, std::string_view detail) {
  std::fprintf(stderr, "list_fuzz: %.*s\n  body: %.*s\n  detail: %.*s\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(body.size()),
               body.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

std::string serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  v.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

struct Outcome {
  std::vector<std::string> items;
  std::string resourceVersion;
  std::string continueToken;
  std::optional<std::string> error;

  bool operator==(const Outcome&) const = default;

  std::string describe() const {
    std::string s;
    for (const auto& i : items) {
      s += "item " + i + "\n";
    }
    return s + "rv " + resourceVersion + " continue " + continueToken + "\nerror " +
           error.value_or("-");
  }
};

Outcome decode(kube::ListPage page) {
  Outcome out;
  for (;;) {
    auto item = page.next();
    if (!item) {
      out.error = item.error().message();
      return out;
    }
    if (!*item) {
      out.resourceVersion = page.resourceVersion();
      out.continueToken = page.continueToken();
      return out;
    }
    out.items.push_back(serialize(**item));
  }
}

std::string gzipped(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    std::abort();
  }
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
    std::abort();
  }
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The same bytes decompressed by gunzip() and by a GunzipReader in `chunk`-byte reads, up to
// `maxBytes`: the output, or the error's message.
std::string gunzipChunked(std::string_view compressed, size_t maxBytes, size_t chunk, bool* ok) {
  kube::GunzipReader reader(compressed, maxBytes, chunk);
  std::string out;
  for (;;) {
    auto next = reader.read();
    if (!next) {
      *ok = false;
      return next.error().message();
    }
    if (next->empty()) {
      *ok = true;
      return out;
    }
    if (next->size() > chunk) {
      fail("GunzipReader returned more than a chunk", compressed, std::to_string(next->size()));
    }
    out.append(*next);
  }
}

void checkGunzip(std::string_view body, size_t chunk, size_t split) {
  constexpr size_t kNoBound = size_t{1} << 30;
  auto whole = kube::gunzip(body, kNoBound);
  bool ok = false;
  const std::string cut = gunzipChunked(body, kNoBound, chunk, &ok);
  if (ok != static_cast<bool>(whole) || cut != (whole ? *whole : whole.error().message())) {
    fail("gzip read in small chunks differs from gunzip()", body,
         "gunzip: " + (whole ? *whole : whole.error().message()) + "\nchunked: " + cut);
  }
  if (whole && !whole->empty()) {
    bool bounded = true;
    const std::string over = gunzipChunked(body, whole->size() - 1, chunk, &bounded);
    if (bounded || over.find("more than") == std::string::npos) {
      fail("a bound below the decompressed size did not fail", body, over);
    }
  }
  const std::string members = gzipped(body.substr(0, split)) + gzipped(body.substr(split));
  auto joined = kube::gunzip(members, kNoBound);
  if (!joined || *joined != body) {
    fail("two gzip members did not decompress to their concatenation", body,
         joined ? *joined : joined.error().message());
  }
}

bool isBlank(std::string_view s) {
  return s.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// What RapidJSON's whole-document parse says the outcome must be; nullopt where the oracle
// cannot tell (duplicate members: ListPage takes every "items" member and the last "metadata").
// `ok` alone is set when only success or failure can be told.
struct Expected {
  bool ok = false;
  std::optional<Outcome> outcome;
};

Expected oracle(std::string_view body) {
  Expected e;
  if (isBlank(body)) {
    e.ok = true;
    e.outcome = Outcome{};
    return e;
  }
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return e;
  }
  int itemsMembers = 0;
  int metadataMembers = 0;
  for (const auto& m : doc.GetObject()) {
    const std::string_view name(m.name.GetString(), m.name.GetStringLength());
    if (name == "items") {
      ++itemsMembers;
      if (!m.value.IsArray() && !m.value.IsNull()) {
        return e;
      }
    } else if (name == "metadata") {
      ++metadataMembers;
    }
  }
  e.ok = true;
  if (itemsMembers > 1 || metadataMembers > 1) {
    return e;
  }
  Outcome out;
  if (auto items = doc.FindMember("items"); items != doc.MemberEnd() && items->value.IsArray()) {
    for (const auto& item : items->value.GetArray()) {
      out.items.push_back(serialize(item));
    }
  }
  if (auto meta = doc.FindMember("metadata"); meta != doc.MemberEnd() && meta->value.IsObject()) {
    if (auto rv = meta->value.FindMember("resourceVersion");
        rv != meta->value.MemberEnd() && rv->value.IsString()) {
      out.resourceVersion = rv->value.GetString();
    }
    if (auto c = meta->value.FindMember("continue");
        c != meta->value.MemberEnd() && c->value.IsString()) {
      out.continueToken = c->value.GetString();
    }
  }
  e.outcome = std::move(out);
  return e;
}

}  // namespace

// libFuzzer's entry point, named by libFuzzer.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const size_t chunk = 1 + data[0] % 16;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Outcome whole = decode(kube::ListPage(body, false));
  const Outcome cut = decode(kube::ListPage(body, false, size_t{1} << 30, chunk));
  if (!(whole == cut)) {
    fail("reading the body in small chunks changed what it decodes to", body,
         "whole:\n" + whole.describe() + "\ncut:\n" + cut.describe());
  }
  const Outcome zipped = decode(kube::ListPage(gzipped(body), true, size_t{1} << 30, chunk));
  if (!(whole == zipped)) {
    fail("gzip-compressing the body changed what it decodes to", body,
         "plain:\n" + whole.describe() + "\ngzip:\n" + zipped.describe());
  }
  checkGunzip(body, chunk, body.size() * data[0] / 255);
  if (body.find('\0') != std::string::npos) {
    return 0;
  }
  const Expected expected = oracle(body);
  if (expected.ok != !whole.error) {
    fail(expected.ok ? "ListPage rejected a body RapidJSON accepts as a list"
                     : "ListPage accepted a body that is not a JSON list object",
         body, whole.describe());
  }
  if (expected.outcome && !(*expected.outcome == whole)) {
    fail("ListPage's items differ from RapidJSON's whole-document parse", body,
         "want:\n" + expected.outcome->describe() + "\ngot:\n" + whole.describe());
  }
  return 0;
}
