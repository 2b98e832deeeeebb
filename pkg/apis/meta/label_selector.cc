#include "pkg/apis/meta/label_selector.h"

#include <algorithm>

namespace egress::meta {
namespace {

Decoded<LabelSelectorRequirement> decodeRequirement(const rapidjson::Value& v) {
  FieldReader r(v);
  LabelSelectorRequirement req;
  std::string op;
  r.read("key", req.key);
  r.read("operator", op);
  r.read("values", req.values);
  if (!r.ok()) {
    return r.finish(std::move(req));
  }
  auto parsed = parseSelectorOperator(op);
  if (!parsed) {
    return DecodeError{"operator", "unknown operator \"" + op + "\""};
  }
  req.op = *parsed;
  // Values that do not fit the operator are a validation error, not a decoding one: the API
  // server's schema accepts them, and an object that does not decode drops out of the cache.
  return req;
}

bool contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

void appendValues(std::string& out, std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  out += " (";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    out += values[i];
  }
  out += ')';
}

}  // namespace

const char* toString(SelectorOperator op) {
  switch (op) {
    case SelectorOperator::In:
      return "In";
    case SelectorOperator::NotIn:
      return "NotIn";
    case SelectorOperator::Exists:
      return "Exists";
    case SelectorOperator::DoesNotExist:
      return "DoesNotExist";
  }
  return "";
}

std::optional<SelectorOperator> parseSelectorOperator(std::string_view s) {
  for (auto op : {SelectorOperator::In, SelectorOperator::NotIn, SelectorOperator::Exists,
                  SelectorOperator::DoesNotExist}) {
    if (s == toString(op)) {
      return op;
    }
  }
  return std::nullopt;
}

bool LabelSelector::matches(const StringMap& labels) const {
  for (const auto& [key, value] : matchLabels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) {
      return false;
    }
  }
  for (const auto& req : matchExpressions) {
    auto it = labels.find(req.key);
    const bool has = it != labels.end();
    bool ok = false;
    switch (req.op) {
      case SelectorOperator::In:
        ok = has && contains(req.values, it->second);
        break;
      case SelectorOperator::NotIn:
        ok = !has || !contains(req.values, it->second);
        break;
      case SelectorOperator::Exists:
        ok = has;
        break;
      case SelectorOperator::DoesNotExist:
        ok = !has;
        break;
    }
    if (!ok) {
      return false;
    }
  }
  return true;
}

std::string LabelSelector::toQueryString() const {
  // (key, rendered requirement), sorted by key like labels.internalSelector; stable so that
  // several requirements on one key keep matchLabels-then-matchExpressions order.
  std::vector<std::pair<std::string_view, std::string>> parts;
  parts.reserve(matchLabels.size() + matchExpressions.size());
  for (const auto& [key, value] : matchLabels) {
    parts.emplace_back(key, key + "=" + value);
  }
  for (const auto& req : matchExpressions) {
    std::string s;
    switch (req.op) {
      case SelectorOperator::In:
        s = req.key + " in";
        appendValues(s, req.values);
        break;
      case SelectorOperator::NotIn:
        s = req.key + " notin";
        appendValues(s, req.values);
        break;
      case SelectorOperator::Exists:
        s = req.key;
        break;
      case SelectorOperator::DoesNotExist:
        s = "!" + req.key;
        break;
    }
    parts.emplace_back(req.key, std::move(s));
  }
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& [key, s] : parts) {
    if (!out.empty()) {
      out += ',';
    }
    out += s;
  }
  return out;
}

bool optionalSelectorMatches(const std::optional<LabelSelector>& selector,
                             const StringMap& labels) {
  return selector.has_value() && selector->matches(labels);
}

Decoded<LabelSelector> decodeLabelSelector(const rapidjson::Value& v) {
  FieldReader r(v);
  LabelSelector s;
  r.read("matchLabels", s.matchLabels);
  r.list("matchExpressions", s.matchExpressions, decodeRequirement);
  return r.finish(std::move(s));
}

void encodeLabelSelector(JsonWriter& w, const LabelSelector& selector) {
  w.StartObject();
  writeFieldIfSet(w, "matchLabels", selector.matchLabels);
  if (!selector.matchExpressions.empty()) {
    writeKey(w, "matchExpressions");
    w.StartArray();
    for (const auto& req : selector.matchExpressions) {
      w.StartObject();
      writeField(w, "key", req.key);
      writeField(w, "operator", toString(req.op));
      writeFieldIfSet(w, "values", req.values);
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

}  // namespace egress::meta
