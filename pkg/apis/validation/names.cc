#include "pkg/apis/validation/names.h"

namespace egress::validation {
namespace {

constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;
constexpr size_t kDns1123SubdomainMaxLength = 253;
constexpr size_t kDns1123LabelMaxLength = 63;

constexpr char kQualifiedNameMessage[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr char kLabelValueMessage[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
constexpr char kDns1123LabelMessage[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
constexpr char kDns1123SubdomainMessage[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

bool isAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool isLowerAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool isNamePart(std::string_view s) {
  if (s.empty() || !isAlnum(s.front()) || !isAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!isAlnum(c) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?, one label of a subdomain.
bool isDns1123Label(std::string_view s) {
  if (s.empty() || !isLowerAlnum(s.front()) || !isLowerAlnum(s.back())) {
    return false;
  }
  for (char c : s) {
    if (!isLowerAlnum(c) && c != '-') {
      return false;
    }
  }
  return true;
}

std::string maxLenError(size_t n) {
  return "must be no more than " + std::to_string(n) + " characters";
}

}  // namespace

std::vector<std::string> qualifiedNameErrors(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  const size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      return {std::string("a qualified name ") + kQualifiedNameMessage +
              " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"};
    }
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const auto& msg : dns1123SubdomainErrors(prefix)) {
        errs.push_back("prefix part " + msg);
      }
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part " + maxLenError(kQualifiedNameMaxLength));
  }
  if (!isNamePart(name)) {
    errs.push_back(std::string("name part ") + kQualifiedNameMessage);
  }
  return errs;
}

std::vector<std::string> labelValueErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) {
    errs.push_back(maxLenError(kLabelValueMaxLength));
  }
  if (!value.empty() && !isNamePart(value)) {
    errs.emplace_back(kLabelValueMessage);
  }
  return errs;
}

std::vector<std::string> dns1123SubdomainErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123SubdomainMaxLength) {
    errs.push_back(maxLenError(kDns1123SubdomainMaxLength));
  }
  bool ok = !value.empty();
  for (size_t start = 0; ok && start <= value.size();) {
    const size_t dot = value.find('.', start);
    const size_t end = dot == std::string_view::npos ? value.size() : dot;
    ok = isDns1123Label(value.substr(start, end - start));
    start = end + 1;
  }
  if (!ok) {
    errs.emplace_back(kDns1123SubdomainMessage);
  }
  return errs;
}

std::vector<std::string> dns1123LabelErrors(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDns1123LabelMaxLength) {
    errs.push_back(maxLenError(kDns1123LabelMaxLength));
  }
  if (!isDns1123Label(value)) {
    errs.emplace_back(kDns1123LabelMessage);
  }
  return errs;
}

}  // namespace egress::validation
