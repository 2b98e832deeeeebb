#include "pkg/kube/list_page.h"

#include <string_view>

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/kube/gzip.h"

namespace egress::kube {
namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Where the scanner is in `{ "k": v, "items": [ item, item ], ... }`.
enum class Where {
  kStart,       // before the opening brace
  kFirstKey,    // after "{": a key or "}"
  kNextMember,  // after a member: "," or "}"
  kFirstItem,   // after "items": [": an item or "]"
  kNextItem,    // after an item: "," or "]"
  kTrailing,    // after the closing brace: nothing but white space
  kDone,
};

}  // namespace

struct ListPage::State {
  State(std::string b, bool gzip, size_t maxBytes, size_t chunkBytes) : body(std::move(b)) {
    if (gzip && !body.empty()) {  // an empty body is an empty list either way
      gunzip.emplace(body, maxBytes, chunkBytes);
    } else {
      // Plain bytes need no copy: the scanner reads them in place, in chunks as with gzip.
      plainChunk = std::max<size_t>(chunkBytes, 1);
    }
  }

  std::string body;
  std::optional<GunzipReader> gunzip;
  size_t plainChunk = 0;
  size_t plainPos = 0;

  std::string_view chunk;  // the bytes at hand; pos is the next one to look at
  size_t pos = 0;
  size_t chunkStart = 0;  // offset of chunk[0] in the decompressed body
  Where where = Where::kStart;
  std::optional<Error> error;
  std::string text;  // the current value's bytes (capacity reused from item to item)
  std::string resourceVersion;
  std::string continueToken;

  size_t offset() const { return chunkStart + pos; }
  // Where the value captured in `text` starts.
  size_t valueStart() const { return offset() - text.size(); }

  Error fail(const std::string& why) { return failAt(why, offset()); }
  Error failAt(const std::string& why, size_t at) {
    error = Error::decode("list response: " + why + " at byte " + std::to_string(at));
    return *error;
  }

  // Makes a byte available at chunk[pos]: false at the end of the body or on a gzip error (then
  // `error` is set).
  bool fill() {
    while (pos == chunk.size()) {
      chunkStart += chunk.size();
      pos = 0;
      if (gunzip) {
        auto next = gunzip->read();
        if (!next) {
          error = next.error();
          chunk = {};
          return false;
        }
        chunk = *next;
      } else {
        const size_t n = std::min(plainChunk, body.size() - plainPos);
        chunk = std::string_view(body).substr(plainPos, n);
        plainPos += n;
      }
      if (chunk.empty()) {
        return false;
      }
    }
    return true;
  }

  // The next byte that is not white space, left in place; false at the end (or on an error).
  bool skipSpace() {
    for (;;) {
      if (!fill()) {
        return false;
      }
      while (pos < chunk.size() && isSpace(chunk[pos])) {
        ++pos;
      }
      if (pos < chunk.size()) {
        return true;
      }
    }
  }

  // Expects `c` as the next non-space byte and consumes it.
  Result<Ok> expect(char c, const char* what) {
    if (!skipSpace()) {
      return endError(what);
    }
    if (chunk[pos] != c) {
      return fail(std::string("expected ") + what);
    }
    ++pos;
    return Ok{};
  }

  Error endError(const char* what) {
    if (error) {
      return *error;  // gzip's reason is the real one
    }
    return fail(std::string("ended early; expected ") + what);
  }

  // Copies the bytes of one JSON value into `text`: a string, object or array to its matching
  // end, a literal or number to the next delimiter. The brackets need not match in kind here;
  // RapidJSON checks the copy in full.
  Result<Ok> captureValue() {
    text.clear();
    if (!skipSpace()) {
      return endError("a value");
    }
    const char first = chunk[pos];
    if (first == ',' || first == ':' || first == '}' || first == ']') {
      return fail("expected a value");
    }
    if (first != '{' && first != '[' && first != '"') {
      for (;;) {
        const size_t start = pos;
        while (pos < chunk.size() && !isSpace(chunk[pos]) && chunk[pos] != ',' &&
               chunk[pos] != '}' && chunk[pos] != ']' && chunk[pos] != ':') {
          ++pos;
        }
        text.append(chunk.substr(start, pos - start));
        if (pos < chunk.size() || !fill()) {
          return error ? Result<Ok>(*error) : Result<Ok>(Ok{});
        }
      }
    }
    int depth = 0;
    bool inString = false;
    bool escaped = false;
    for (;;) {
      if (!fill()) {
        return endError("the end of a value");
      }
      const size_t start = pos;
      bool done = false;
      for (; pos < chunk.size() && !done; ++pos) {
        const char c = chunk[pos];
        if (inString) {
          if (escaped) {
            escaped = false;
          } else if (c == '\\') {
            escaped = true;
          } else if (c == '"') {
            inString = false;
            done = depth == 0;
          }
        } else if (c == '"') {
          inString = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          done = --depth == 0;
        }
      }
      text.append(chunk.substr(start, pos - start));
      if (done) {
        return Ok{};
      }
    }
  }

  // The captured value, parsed.
  Result<rapidjson::Document> parseValue(const char* what) {
    const size_t start = valueStart();
    // RapidJSON takes a NUL for the end of its input and would accept what comes before it; no
    // JSON value holds one.
    if (const size_t nul = text.find('\0'); nul != std::string::npos) {
      error = Error::decode(std::string("list response: ") + what + " holds a NUL byte at byte " +
                            std::to_string(start + nul));
      return *error;
    }
    rapidjson::Document doc;
    doc.Parse<rapidjson::kParseIterativeFlag>(text.data(), text.size());
    if (doc.HasParseError()) {
      error = Error::decode(std::string("list response: ") + what + " is not JSON (" +
                            rapidjson::GetParseError_En(doc.GetParseError()) + ") at byte " +
                            std::to_string(start + doc.GetErrorOffset()));
      return *error;
    }
    return doc;
  }

  // One member of the list object, after its "," or "{": the items array is entered (its items
  // come from next()), metadata is read, anything else is checked and dropped.
  Result<Ok> member() {
    if (!skipSpace()) {
      return endError("a member name");
    }
    if (chunk[pos] != '"') {
      return fail("expected a member name");
    }
    if (auto captured = captureValue(); !captured) {
      return captured.error();
    }
    auto key = parseValue("a member name");
    if (!key) {
      return key.error();
    }
    const std::string_view name(key->GetString(), key->GetStringLength());
    if (auto colon = expect(':', "\":\""); !colon) {
      return colon.error();
    }
    if (name == "items") {
      if (!skipSpace()) {
        return endError("the items");
      }
      if (chunk[pos] == '[') {
        ++pos;
        where = Where::kFirstItem;
        return Ok{};
      }
    }
    if (auto captured = captureValue(); !captured) {
      return captured.error();
    }
    auto value = parseValue(name == "items" ? "items" : "a member");
    if (!value) {
      return value.error();
    }
    if (name == "items" && !value->IsNull()) {
      return failAt("items is not an array", valueStart());
    }
    if (name == "metadata" && value->IsObject()) {
      resourceVersion.clear();
      continueToken.clear();
      if (auto rv = value->FindMember("resourceVersion");
          rv != value->MemberEnd() && rv->value.IsString()) {
        resourceVersion = rv->value.GetString();
      }
      if (auto c = value->FindMember("continue"); c != value->MemberEnd() && c->value.IsString()) {
        continueToken = c->value.GetString();
      }
    }
    where = Where::kNextMember;
    return Ok{};
  }
};

ListPage::ListPage(std::string body, bool gzip, size_t maxBytes, size_t chunkBytes)
    : state_(std::make_unique<State>(std::move(body), gzip, maxBytes, chunkBytes)) {}

ListPage ListPage::fromDocument(const rapidjson::Value& list) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buf);
  list.Accept(writer);
  return ListPage(std::string(buf.GetString(), buf.GetSize()), false);
}

ListPage::~ListPage() = default;
ListPage::ListPage(ListPage&&) noexcept = default;
ListPage& ListPage::operator=(ListPage&&) noexcept = default;

const std::string& ListPage::resourceVersion() const {
  return state_->resourceVersion;
}
const std::string& ListPage::continueToken() const {
  return state_->continueToken;
}
size_t ListPage::bodyBytes() const {
  return state_->body.size();
}

Result<std::optional<rapidjson::Document>> ListPage::next() {
  State& s = *state_;
  for (;;) {
    if (s.error) {
      return *s.error;
    }
    switch (s.where) {
      case Where::kStart:
        if (!s.skipSpace()) {
          if (s.error) {
            return *s.error;
          }
          s.where = Where::kDone;  // an empty body: an empty list
          continue;
        }
        if (s.chunk[s.pos] != '{') {
          return s.fail("not a JSON object");
        }
        ++s.pos;
        s.where = Where::kFirstKey;
        continue;
      case Where::kFirstKey:
      case Where::kNextMember: {
        if (!s.skipSpace()) {
          return s.endError("\"}\"");
        }
        if (s.chunk[s.pos] == '}') {
          ++s.pos;
          s.where = Where::kTrailing;
          continue;
        }
        if (s.where == Where::kNextMember) {
          if (auto comma = s.expect(',', "\",\" or \"}\""); !comma) {
            return comma.error();
          }
        }
        if (auto m = s.member(); !m) {
          return m.error();
        }
        continue;
      }
      case Where::kFirstItem:
      case Where::kNextItem: {
        if (!s.skipSpace()) {
          return s.endError("\"]\"");
        }
        if (s.chunk[s.pos] == ']') {
          ++s.pos;
          s.where = Where::kNextMember;
          continue;
        }
        if (s.where == Where::kNextItem) {
          if (auto comma = s.expect(',', "\",\" or \"]\""); !comma) {
            return comma.error();
          }
        }
        if (auto captured = s.captureValue(); !captured) {
          return captured.error();
        }
        auto item = s.parseValue("an item");
        if (!item) {
          return item.error();
        }
        s.where = Where::kNextItem;
        return std::optional<rapidjson::Document>(std::move(*item));
      }
      case Where::kTrailing:
        if (s.skipSpace()) {
          return s.fail("data after the list object");
        }
        if (s.error) {
          return *s.error;
        }
        s.where = Where::kDone;
        continue;
      case Where::kDone:
        return std::optional<rapidjson::Document>();
    }
  }
}

}  // namespace egress::kube
