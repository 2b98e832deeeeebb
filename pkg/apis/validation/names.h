// File: names.h
//
// The name syntaxes the API server checks in a pod spec, so validate() can refuse what the API
// server would refuse in the gateway pods the operator creates: qualified names (label keys,
// taint and toleration keys, resource names such as example.com/gpu), label values and DNS-1123
// subdomains. Each function returns apimachinery's messages (k8s.io/apimachinery/pkg/util/
// validation), word for word, empty when the value is valid; written without std::regex.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace egress::validation {

// IsQualifiedName: [prefix/]name, the prefix a DNS-1123 subdomain, the name at most 63
// alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric.
std::vector<std::string> qualifiedNameErrors(std::string_view value);
// IsValidLabelValue: empty, or a name part as above.
std::vector<std::string> labelValueErrors(std::string_view value);
// IsDNS1123Subdomain: at most 253 characters, dot-separated lower-case alphanumeric labels that
// may contain '-' inside.
std::vector<std::string> dns1123SubdomainErrors(std::string_view value);
// IsDNS1123Label (a namespace's name): at most 63 lower-case alphanumerics or '-', starting and
// ending with an alphanumeric.
std::vector<std::string> dns1123LabelErrors(std::string_view value);

}  // namespace egress::validation
