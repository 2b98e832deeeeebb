// File: problem.h
//
// What egw-agent could not program, as values. A problem has a kind, the policy it concerns (by
// uid and key; none for a slice that names no policy) and a sentence. The agent logs each one
// once, when it appears; it counts them by kind (egw_agent_problems); and it reports those of
// policies on its Lease (kProblemsAnnotation). From that report the operator sets the policy's
// Programmed and Ready to False with the kind as the reason, so a policy is never Ready while a
// node refuses to program it.
//
// The report is small: the whole Lease is written at every renewal (2 s), and every agent
// watches every agent's Lease. It carries one problem per policy, at most kMaxReportedPolicies
// of them (the lowest uids), each message cut at kMaxReportedMessage bytes: about 15 KB at most.
// Past the cap, the policies left out are counted in a final entry without a uid, and are not
// told (the metric and the log still count them).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace egress::dataplane {

// The operator reads the same key (pkg/controller/names.h; dataplane_contract_test pins both).
inline constexpr std::string_view kProblemsAnnotation = "egressgateway.dev/problems";
inline constexpr size_t kMaxReportedPolicies = 50;
inline constexpr size_t kMaxReportedMessage = 200;

enum class ProblemKind {
  kUnparsable,        // an address or CIDR in a slice does not parse: it is skipped
  kInvalidSlice,      // a slice without a policy uid, or a policy's slices without a gateway
  kRefusedAddress,    // an egress IP that may never be one (special use, a node's, in-cluster)
  kContestedAddress,  // an egress IP two policies list: nobody holds it
  kDuplicateSlot,     // an egress IP two slots of one policy list: nobody holds it
  kNoMark,            // the mark bits ran out: the address cannot be routed to its holder
};

inline constexpr ProblemKind kProblemKinds[] = {
    ProblemKind::kUnparsable,       ProblemKind::kInvalidSlice,  ProblemKind::kRefusedAddress,
    ProblemKind::kContestedAddress, ProblemKind::kDuplicateSlot, ProblemKind::kNoMark};

// "refused-address": the metric's label.
std::string_view problemLabel(ProblemKind kind);
// "RefusedAddress": the policy condition's reason.
std::string_view problemReason(ProblemKind kind);
std::optional<ProblemKind> problemKindFromReason(std::string_view reason);

struct Problem {
  ProblemKind kind = ProblemKind::kUnparsable;
  std::string uid;  // the policy's, "" when it concerns none
  std::string key;  // "namespace/policy", "" when it concerns none
  std::string message;

  // "<label>: <message>": one log line, and the identity of a problem across syncs.
  std::string toString() const;
  friend bool operator==(const Problem&, const Problem&) = default;
};

// The value of kProblemsAnnotation: a JSON array, by uid, of
// {"uid", "policy", "reason", "message", "count"} (count: the policy's problems on this node),
// then, when policies were left out, {"omitted": N}. "" when no problem concerns a policy.
std::string problemsAnnotation(const std::vector<Problem>& problems);

}  // namespace egress::dataplane
