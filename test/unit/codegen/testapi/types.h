// File: types.h
//
// A test-only API package for the code generator, not part of the operator: every type and
// marker hack/codegen supports, so the build generates its codecs, validation, clientset,
// listers, informers and CRDs with the real tool, compiles them under -Werror, and
// testapi_test.cc exercises them (decode -> validate -> encode round trips, and a violation of
// every constraint in the CRDs refused by validate()). The grammar is the one documented in
// pkg/apis/networking/v1alpha1/types.h.
//
// +groupName=codegentest.egressgateway.dev
// +version=v1
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pkg/apis/meta/condition.h"
#include "pkg/apis/meta/decode.h"
#include "pkg/apis/meta/label_selector.h"
#include "pkg/apis/meta/object_meta.h"
#include "pkg/apis/meta/quantity.h"

namespace egress::codegentest::v1 {

// Port is an item of a map list with two keys.
struct Port {
  // +required
  // +kubebuilder:validation:Enum=TCP;UDP
  std::string protocol;
  // +required
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:validation:Maximum=65535
  int32_t port = 0;
  // +kubebuilder:validation:MaxLength=15
  std::string name;

  bool operator==(const Port&) const = default;
};

// Scalars has each scalar type, plain and optional, with the markers that apply to it.
// +kubebuilder:validation:XValidation:rule="!has(self.label) || self.label != 'a,b==c'",message="label, never \"a,b==c\""
struct Scalars {
  // +required
  // +kubebuilder:validation:MinLength=2
  // +kubebuilder:validation:MaxLength=8
  // +kubebuilder:validation:Pattern=^[a-z]+$
  std::string name;
  // +kubebuilder:validation:Enum=Red;Green;Blue
  // +kubebuilder:default=Red
  std::string color;
  // +kubebuilder:validation:Format=cidr
  std::string cidr;
  // +kubebuilder:validation:Format=ipv4
  std::string ipv4;
  // +kubebuilder:validation:Format=ipv6
  std::string ipv6;
  // +kubebuilder:validation:Format=ip
  std::string ip;
  // +kubebuilder:validation:Format=ip-or-cidr
  std::string ipOrCIDR;
  // std::optional: "" is present, and too short.
  // +kubebuilder:validation:MinLength=1
  // +kubebuilder:validation:MaxLength=4
  std::optional<std::string> label;
  // +required
  bool enabled = false;
  // +kubebuilder:default=true
  std::optional<bool> flag;
  // +kubebuilder:validation:Minimum=-5
  // +kubebuilder:validation:Maximum=5
  int32_t small = 0;
  // +kubebuilder:validation:Minimum=-10000000000
  // +kubebuilder:validation:Maximum=10000000000
  int64_t big = 0;
  // +required
  // +kubebuilder:validation:Minimum=1
  int32_t replicas = 0;
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:default=3
  std::optional<int32_t> count;
  // +kubebuilder:validation:Maximum=0
  std::optional<int64_t> offset;
  // A quantity: a JSON integer or a quantity string; "" (no text) is absent, so required means
  // set.
  // +required
  meta::Quantity size;
  // An optional quantity.
  std::optional<meta::Quantity> burst;

  bool operator==(const Scalars&) const = default;
};

// Lists has a list of each item type.
struct Lists {
  // +required
  // +listType=set
  // +kubebuilder:validation:MinItems=1
  // +kubebuilder:validation:MaxItems=3
  // +kubebuilder:validation:items:MinLength=2
  // +kubebuilder:validation:items:MaxLength=10
  // +kubebuilder:validation:items:Pattern=^[a-z]
  std::vector<std::string> names;
  // +kubebuilder:validation:items:Enum=a;b
  std::vector<std::string> letters;
  // +kubebuilder:validation:items:Format=ip-or-cidr
  std::vector<std::string> ranges;
  // +listType=set
  // +kubebuilder:validation:items:Minimum=0
  // +kubebuilder:validation:items:Maximum=100
  std::vector<int32_t> percents;
  // +kubebuilder:validation:MinItems=2
  // +kubebuilder:validation:MaxItems=3
  // +kubebuilder:validation:items:Minimum=-1
  std::vector<int64_t> offsets;
  // +listType=atomic
  std::vector<bool> switches;
  // +listType=map
  // +listMapKey=protocol
  // +listMapKey=port
  // +kubebuilder:validation:MaxItems=4
  std::vector<Port> ports;
  std::vector<meta::LabelSelector> selectors;
  // +listType=map
  // +listMapKey=type
  std::vector<meta::Condition> conditions;
  // +kubebuilder:validation:MaxItems=4
  std::vector<meta::Quantity> steps;

  bool operator==(const Lists&) const = default;
};

// Maps has each kind of map.
struct Maps {
  // +kubebuilder:validation:items:MinLength=1
  // +kubebuilder:validation:items:MaxLength=5
  // +kubebuilder:validation:items:Pattern=^[a-z]*$
  meta::StringMap labels;
  // std::optional: {} is present.
  // +kubebuilder:validation:items:Enum=on;off
  std::optional<meta::StringMap> switches;
  // +kubebuilder:validation:items:Format=ip
  // +kubebuilder:default={}
  meta::StringMap addresses;
  // Resource name -> quantity, as a container's limits.
  meta::QuantityMap limits;
  // std::optional: {} is present.
  std::optional<meta::QuantityMap> requests;

  bool operator==(const Maps&) const = default;
};

// GatewaySpec nests every struct kind: plain, optional, and the meta types.
struct GatewaySpec {
  // +required
  Scalars scalars;
  Lists lists;
  Maps maps;
  std::optional<Scalars> fallback;
  // +required
  meta::LabelSelector selector;
  std::optional<meta::LabelSelector> namespaceSelector;
  std::optional<meta::Condition> lastCondition;

  bool operator==(const GatewaySpec&) const = default;
};

// GatewayStatus is what a controller would write.
struct GatewayStatus {
  int64_t observedGeneration = 0;
  // Written even when 0.
  // +emitzero
  int32_t readyReplicas = 0;
  // Written even when false.
  // +emitzero
  bool degraded = false;
  // +listType=map
  // +listMapKey=type
  std::vector<meta::Condition> conditions;

  bool operator==(const GatewayStatus&) const = default;
};

// Gateway is a namespaced kind with every resource marker (English plural: gateways).
// +genclient
// +kubebuilder:resource:scope=Namespaced,shortName=gw;gtw,categories=test;codegen
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name=Name,type=string,JSONPath=.spec.scalars.name
// +kubebuilder:printcolumn:name=Replicas,type=integer,JSONPath=.spec.scalars.replicas
// +kubebuilder:validation:XValidation:rule=self.metadata.name.startsWith('gw-'),message=named gw-*
struct Gateway {
  meta::ObjectMeta metadata;
  // +required
  GatewaySpec spec;
  GatewayStatus status;

  bool operator==(const Gateway&) const = default;
};

// GatewayClassSpec names a controller.
struct GatewayClassSpec {
  // +required
  // +kubebuilder:validation:MaxLength=253
  std::string controllerName;

  bool operator==(const GatewayClassSpec&) const = default;
};

// GatewayClass is a cluster-scoped kind (English plural: gatewayclasses).
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:scope=Cluster
struct GatewayClass {
  meta::ObjectMeta metadata;
  // +required
  GatewayClassSpec spec;

  bool operator==(const GatewayClass&) const = default;
};

// AccessPolicy's plural follows the consonant-y rule: accesspolicies.
// +genclient
// +kubebuilder:resource:scope=Namespaced
struct AccessPolicy {
  meta::ObjectMeta metadata;
  // +kubebuilder:validation:Enum=Allow;Deny
  std::string action;

  bool operator==(const AccessPolicy&) const = default;
};

// Mouse's plural is irregular, so the resource marker names it.
// +genclient
// +kubebuilder:resource:scope=Namespaced,path=mice,singular=mouse
struct Mouse {
  meta::ObjectMeta metadata;
  // 0 is absent (omitted when encoded), so the bounds apply to a count that is set.
  // +kubebuilder:validation:Minimum=1
  // +kubebuilder:validation:Maximum=30
  int32_t whiskers = 0;

  bool operator==(const Mouse&) const = default;
};

}  // namespace egress::codegentest::v1
