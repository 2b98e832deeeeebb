// File: label_selector.h
//
// metav1.LabelSelector: how a Deployment or PDB names its pods, and how the operator lists and
// watches them (?labelSelector=). Matching follows k8s.io/apimachinery/pkg/labels: requirements
// are ANDed, NotIn and DoesNotExist match objects without the key, and an empty selector matches
// everything. A null (absent) selector, by contrast, matches nothing (LabelSelectorAsSelector
// returns labels.Nothing()) -- model it as std::optional<LabelSelector> and use
// optionalSelectorMatches().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/encode.h"

namespace egress::meta {

enum class SelectorOperator { In, NotIn, Exists, DoesNotExist };

// "In", "NotIn", "Exists", "DoesNotExist".
const char* toString(SelectorOperator op);
std::optional<SelectorOperator> parseSelectorOperator(std::string_view s);

struct LabelSelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::In;
  // Valid: non-empty for In/NotIn, empty for Exists/DoesNotExist. Decoding keeps whatever was
  // sent (the schema allows anything); validation reports a mismatch.
  std::vector<std::string> values;

  bool operator==(const LabelSelectorRequirement&) const = default;
};

struct LabelSelector {
  StringMap matchLabels;
  std::vector<LabelSelectorRequirement> matchExpressions;

  // No requirements at all: selects every object.
  bool empty() const { return matchLabels.empty() && matchExpressions.empty(); }

  bool matches(const StringMap& labels) const;

  // The selector in the syntax the API server parses for ?labelSelector=, requirements sorted by
  // key and values sorted, e.g. "a=b,env in (prod,stage),!legacy,tier"; "" for an empty
  // selector. Not URL-encoded: the caller escapes it as a query parameter.
  std::string toQueryString() const;

  bool operator==(const LabelSelector&) const = default;
};

// A null selector selects nothing; a present one, even empty, is matched as usual.
bool optionalSelectorMatches(const std::optional<LabelSelector>& selector, const StringMap& labels);

// Accepts what the API server's schema accepts and rejects only what it cannot represent: an
// unknown operator, with the offending path ("matchExpressions[1].operator: unknown operator
// \"Has\""), or a value of the wrong JSON type. In/NotIn without values and Exists/DoesNotExist
// with values decode as sent; validation reports them (LabelSelectorAsSelector's checks).
Decoded<LabelSelector> decodeLabelSelector(const rapidjson::Value& v);
void encodeLabelSelector(JsonWriter& w, const LabelSelector& selector);

}  // namespace egress::meta
