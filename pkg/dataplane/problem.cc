#include "pkg/dataplane/problem.h"

#include <algorithm>
#include <map>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace egress::dataplane {
namespace {

struct KindNames {
  ProblemKind kind;
  std::string_view label;
  std::string_view reason;
};

constexpr KindNames kNames[] = {
    {ProblemKind::kUnparsable, "unparsable", "Unparsable"},
    {ProblemKind::kInvalidSlice, "invalid-slice", "InvalidSlice"},
    {ProblemKind::kRefusedAddress, "refused-address", "RefusedAddress"},
    {ProblemKind::kContestedAddress, "contested-address", "ContestedAddress"},
    {ProblemKind::kDuplicateSlot, "duplicate-slot", "DuplicateSlot"},
    {ProblemKind::kNoMark, "no-mark", "NoMark"},
};

const KindNames& namesOf(ProblemKind kind) {
  for (const auto& n : kNames) {
    if (n.kind == kind) {
      return n;
    }
  }
  return kNames[0];
}

// At most `max` bytes of `text`, not ending inside a UTF-8 sequence.
std::string_view cut(std::string_view text, size_t max) {
  if (text.size() <= max) {
    return text;
  }
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xc0) == 0x80) {
    --n;
  }
  return text.substr(0, n);
}

}  // namespace

std::string_view problemLabel(ProblemKind kind) {
  return namesOf(kind).label;
}

std::string_view problemReason(ProblemKind kind) {
  return namesOf(kind).reason;
}

std::optional<ProblemKind> problemKindFromReason(std::string_view reason) {
  for (const auto& n : kNames) {
    if (n.reason == reason) {
      return n.kind;
    }
  }
  return std::nullopt;
}

std::string Problem::toString() const {
  return std::string(problemLabel(kind)) + ": " + message;
}

std::string problemsAnnotation(const std::vector<Problem>& problems) {
  // The first problem of each policy in a fixed order, so that the same problems always write
  // the same text (a changed text is a Lease write).
  struct First {
    const Problem* problem = nullptr;
    int count = 0;
  };
  std::map<std::string, First> byUID;
  for (const auto& p : problems) {
    if (p.uid.empty()) {
      continue;
    }
    auto& f = byUID[p.uid];
    ++f.count;
    if (f.problem == nullptr || p.toString() < f.problem->toString()) {
      f.problem = &p;
    }
  }
  if (byUID.empty()) {
    return "";
  }
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  auto str = [&](std::string_view s) {
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  };
  w.StartArray();
  size_t written = 0;
  for (const auto& [uid, f] : byUID) {
    if (written == kMaxReportedPolicies) {
      break;
    }
    ++written;
    w.StartObject();
    w.Key("uid");
    str(uid);
    w.Key("policy");
    str(f.problem->key);
    w.Key("reason");
    str(problemReason(f.problem->kind));
    w.Key("message");
    str(cut(f.problem->message, kMaxReportedMessage));
    w.Key("count");
    w.Int(f.count);
    w.EndObject();
  }
  if (written < byUID.size()) {
    w.StartObject();
    w.Key("omitted");
    w.Uint64(byUID.size() - written);
    w.EndObject();
  }
  w.EndArray();
  return {buf.GetString(), buf.GetSize()};
}

}  // namespace egress::dataplane
