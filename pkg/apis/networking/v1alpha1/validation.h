// File: validation.h
//
// validate(): everything the API server would check for our kinds, again, in code: the schema
// (zz_generated.validation.h, from the markers) plus the CEL rules (x-kubernetes-validations),
// which API servers before 1.25 ignore, plus semantic checks no schema can express (an excluded
// address outside the pool, overlapping CIDRs, CIDRs with host bits set or of the wrong family),
// plus what the API server would refuse in the gateway pods the operator creates from a policy
// (tolerations, node selector labels, resource names, requests above their limits), with the API
// server's messages for pods. Controllers call it before acting on a spec and report the
// problems in a status condition and an event; they never act on an invalid spec. Every problem
// is returned, each with its field path. Status is not validated (we write it).
#pragma once

#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/apis/validation/field_error.h"

namespace egress::networking::v1alpha1 {

validation::FieldErrors validate(const IPAMPool& pool);
validation::FieldErrors validate(const EgressGatewayPolicy& policy);
validation::FieldErrors validate(const OperatorConfig& config);

// validate(updated) plus the transition rules: a policy's egressIP.pool is immutable.
validation::FieldErrors validateUpdate(const EgressGatewayPolicy& old,
                                       const EgressGatewayPolicy& updated);

}  // namespace egress::networking::v1alpha1
