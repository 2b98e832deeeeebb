// File: agents.h
//
// What the operator knows of the egw-agents, from their egw-agent-<node> Leases: whether each
// node's agent is live, and which egress IPs it reports programmed (kProgrammedAnnotation).
// Liveness is judged by when the operator saw a renewal (ObservedLeases: client-go's
// observedTime), never by comparing the agent's renewTime with the operator's clock: an agent
// whose clock runs 5 s behind would otherwise look dead 5 s early, and its address would move
// while it still answers for it. The agent fences itself a margin before a full duration after
// it sent the renewal; the operator moves an address no earlier than a full duration after it
// saw that renewal, which is later.
//
// It also keeps the addresses the published view stopped naming (a slice rewritten without
// them, or deleted) until every live agent reports, on its Lease (kObservedSlicesAnnotation),
// that its programmed state reflects the slices' version that dropped them: an agent that read
// the slice just before the write may have programmed the address and not yet said so, and the
// operator must not hand it to another policy in that window.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pkg/apis/coordination/lease.h"
#include "pkg/base/clock.h"
#include "pkg/ipam/address.h"
#include "pkg/leaderelection/observed_leases.h"

namespace egress::controller {

// A problem an agent reports for a policy (kProblemsAnnotation).
struct ReportedProblem {
  std::string uid;
  std::string key;     // "namespace/policy"
  std::string reason;  // one of kDataplaneProblemReasons, or kReasonDataplaneProblem
  std::string message;

  friend bool operator==(const ReportedProblem&, const ReportedProblem&) = default;
};

// A problem with the node whose agent reports it.
struct NodeProblem {
  std::string node;
  std::string reason;
  std::string message;
};

// The node of an agent Lease ("egw-agent-<node>"), or "" for another Lease.
std::string agentLeaseNode(const coordination::Lease& lease);
// The addresses an agent Lease reports programmed; unparsable items are skipped.
std::set<ipam::Address> programmedAddresses(const coordination::Lease& lease);
// The problems an agent Lease reports, by policy uid; entries that do not parse, or name no
// uid, are skipped (an unreadable report must not take a policy down, nor hide the others).
std::map<std::string, ReportedProblem> reportedProblems(const coordination::Lease& lease);

class Agents {
 public:
  // Records a Lease event seen at `now`. Returns whether what the operator acts on changed:
  // the reported addresses or problems (a renewal alone changes only the observed time).
  bool observe(const coordination::Lease& lease, Clock::TimePoint now);
  void forget(const std::string& node);

  bool live(const std::string& node, Clock::TimePoint now) const;
  // When `node`'s agent goes stale unless a renewal is seen first; nullopt if never live.
  std::optional<Clock::TimePoint> expiry(const std::string& node) const;
  // What `node`'s agent reports programmed (whether or not it is live).
  const std::set<ipam::Address>& programmed(const std::string& node) const;
  // What `node`'s agent reports it cannot program, by policy uid (whether or not it is live).
  const std::map<std::string, ReportedProblem>& problems(const std::string& node) const;
  // The problems live agents report for the policy of `uid`, by node.
  std::vector<NodeProblem> problemsOf(const std::string& uid, Clock::TimePoint now) const;
  // Per address, the nodes whose live agents report it programmed: who answers for it now. A
  // stale agent has fenced itself (it withdraws before the operator can see it stale), so it
  // claims nothing.
  std::map<ipam::Address, std::set<std::string>> claims(Clock::TimePoint now) const;
  // Every node with a Lease.
  std::set<std::string> nodes() const;

  // The published view of policy `key` no longer names `address` as of the slices' version
  // `version` (at least that of the write that dropped it). Whether a live agent may still
  // answer for it from an older read: then it is recorded, and until the address is forgotten
  // this answers from the first record (a newer version would keep an agent always behind
  // under churn from ever catching up).
  bool withdrawn(const ipam::Address& address, const std::string& version, const std::string& key,
                 Clock::TimePoint now);
  // The address is named again, or free: nothing to wait for.
  void forgetWithdrawal(const ipam::Address& address);
  // The policies whose recorded withdrawals every live agent has now caught up with, once per
  // catching up (an agent that turns live behind them makes them wait again): their releases
  // waited for it. With them, once the start version is caught up with, those awaiting it.
  std::set<std::string> settle(Clock::TimePoint now);
  // This process starts leading with the slices at `version`. What it finds free may have left
  // its predecessor's view moments before, and an agent may answer for it from an older read
  // and not have said so yet: nothing is handed out afresh until every live agent reports
  // `version` (startPending).
  void setStartVersion(const std::string& version) { startVersion_ = version; }
  const std::string& startVersion() const { return startVersion_; }
  bool startPending(Clock::TimePoint now) const;
  // Policy `key` wanted a new address while startPending(): settle() returns it when it may go on.
  void awaitStart(const std::string& key) { startWaiting_.insert(key); }
  // The live agents that have not reported `version`, as "node-a (9), node-c (none)", for the
  // log line that says what a release waits for; "" when none.
  std::string behind(const std::string& version, Clock::TimePoint now) const;
  // Recorded withdrawals (a gauge's worth: bounded by the addresses being released).
  size_t withdrawals() const { return withdrawals_.size(); }

 private:
  struct Withdrawal {
    std::string version;
    std::string key;
    bool settled = false;  // caught up when settle() last looked
  };
  bool caughtUp(const std::string& version, Clock::TimePoint now) const;

  leaderelection::ObservedLeases leases_;
  std::map<std::string, std::set<ipam::Address>> programmed_;
  std::map<std::string, std::map<std::string, ReportedProblem>> problems_;
  std::map<std::string, std::string> observedSlices_;
  std::map<ipam::Address, Withdrawal> withdrawals_;
  std::string startVersion_;  // "" once every live agent reported it
  std::set<std::string> startWaiting_;
};

}  // namespace egress::controller
