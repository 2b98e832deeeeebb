// File: agent.h
//
// egw-agent's sync loop, run by the Manager as a controller with one key. It reads only what no
// namespace's editor can write: the operator's cluster-scoped EgressPolicySlices, the Nodes, the
// IPAMPools and the OperatorConfig (which addresses may be egress IPs at all), and the agents'
// Leases in their own namespace; it writes nothing but its own Lease (the renewer's),
// so a forged object elsewhere cannot make any node SNAT to or announce an address.
// Any event queues a sync after a short debounce (a burst of events is one sync), and so does
// any change of what the agents tell each other (PeerMesh: this node's lease, a node certified
// dead, a claim); a sync also re-runs each second. Who may hold what is decided by the agents
// among themselves, not through the API server (peer_quorum.h, holder_choice.h): the members are
// the nodes with an agent Lease, each node's liveness is what a majority of the agents hears, and
// an address moves to another gateway node of its policy when its holder is certified dead, API
// server or not. A dry run takes no part in that (it must not vote): it judges liveness by the
// agents' Leases as the operator does (ObservedLeases, monotonic clock; its own: its renewals).
// A sync turns the caches into a ClusterView and, on a thread of its own (the loop keeps up the
// heartbeats meanwhile), computes the desired kernel state (pkg/dataplane),
// applies it with the appliers (links, sysctls, rules and routes, nftables), refreshes the
// kernel-side fence of what it holds (fence.h: it times out when this agent's lease ends unless
// refreshed, which every heartbeat round does, so a killed, hung or cut-off agent stops
// answering on time), then announces newly held egress IPs by gratuitous ARP / unsolicited NA
// at 0, 1 and 2 s. Then it reports
// what it holds and has programmed on its Lease (kProgrammedAnnotation, through
// AgentOptions::report) and has the renewer write it at once when it changed: the operator
// derives the gateway pods' readiness gate from it. With it goes the slices' resourceVersion
// that the programmed state reflects (kObservedSlicesAnnotation): the operator frees an address
// the published view stopped naming only once every live agent reports a version at least that
// of the write that dropped it (before that, an agent may have programmed it from an older
// read and not yet said so). With dryRun nothing is applied or sent: the
// state is computed and counted only, and reported as if it had been (so the API side can be
// tested).
// Stopping (SIGTERM) leaves the kernel as it is, so that a restart or a rolling update carries
// on without a gap: the agent asks its peers for the restart grace first (PeerMesh::leave) and
// fences what it holds until then, and the successor finds the fence's held addresses, claims
// them and changes nothing. Except on
// an uninstall: when the DaemonSet that runs the agent (AgentOptions::ownerDaemonSet) is gone
// from the cache or being deleted, the agent removes everything it put in the kernel before it
// exits. It learns that from a watch opened at start, because by the time the kubelet stops it
// on an uninstall, its RBAC and ServiceAccount are usually deleted too.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pkg/agent/agent_metrics.h"
#include "pkg/agent/lease_renewer.h"
#include "pkg/agent/peer_mesh.h"
#include "pkg/apis/apps/daemon_set.h"
#include "pkg/apis/coordination/lease.h"
#include "pkg/apis/core/node.h"
#include "pkg/apis/networking/v1alpha1/types.h"
#include "pkg/base/worker_thread.h"
#include "pkg/cache/shared_informer.h"
#include "pkg/controllerruntime/controller.h"
#include "pkg/dataplane/announcer.h"
#include "pkg/dataplane/conntrack_cleaner.h"
#include "pkg/dataplane/desired_state.h"
#include "pkg/dataplane/link_applier.h"
#include "pkg/dataplane/nft_applier.h"
#include "pkg/dataplane/routing_applier.h"
#include "pkg/dataplane/sysctl_applier.h"
#include "pkg/leaderelection/observed_leases.h"

namespace egress::agent {

inline constexpr const char* kSyncKey = "sync";

// What the agent says of itself on its Lease, each the value of an annotation.
struct AgentReport {
  // What it holds and has programmed (kProgrammedAnnotation).
  std::string programmed;
  // The slices' resourceVersion that state reflects (kObservedSlicesAnnotation).
  std::string observedSlices;
  // The problems of policies it could not program (kProblemsAnnotation).
  std::string problems;

  friend bool operator==(const AgentReport&, const AgentReport&) = default;
};

struct AgentOptions {
  std::string nodeName;
  std::string leaseNamespace;
  // uplink "" = the device that has the node's InternalIP, found at the first sync.
  dataplane::DataplaneConfig dataplane;
  // The heartbeats (on dataplane.heartbeatPort).
  QuorumOptions quorum;
  bool dryRun = false;
  std::chrono::milliseconds debounce{100};
  std::chrono::milliseconds resync{1000};
  // Publishes the agent's report on its Lease's next write. A changed `programmed` or `problems`
  // is written at once (the agent has the renewer write it); a newer `observedSlices` alone rides
  // on the next renewal. Unset: not reported.
  std::function<void(const AgentReport&)> report;
  // The API server's addresses as this agent reaches it (kube::serverAddresses): never an
  // egress IP, never a destination that leaves through a gateway.
  std::vector<ipam::Address> apiServer;
  // The DaemonSet that runs this agent ("" = none: the state is never removed on exit). Only a
  // cluster administrator can delete it: its deletion is what an uninstall does, and the agents'
  // cue to leave the nodes clean.
  std::string ownerNamespace;
  std::string ownerDaemonSet;
};

class Agent : public controllerruntime::Controller {
 public:
  // `renewer` and `registry` must outlive the agent.
  Agent(controllerruntime::Controller::Options base, AgentOptions options, LeaseRenewer& renewer,
        prometheus::Registry& registry);
  ~Agent() override;

  // The workers until stop(), then the clean-up of an uninstall (see above).
  net::awaitable<void> run() override;

  // Why this agent's stop is an uninstall: "" when it is not, or when it cannot tell (no owner
  // DaemonSet given, its cache never synced, or this process never saw it), so that doubt keeps
  // the node's egress working.
  std::string uninstallReason() const;

  // The sync's key, for the renewer's onChange.
  controllerruntime::Enqueuer syncQueue() { return enqueuer(); }

 protected:
  Result<Ok, std::string> watchResources(cache::SharedInformerFactory& factory) override;
  Result<Ok, std::string> addEventHandlers() override;
  net::awaitable<controllerruntime::ReconcileResult> reconcile(const std::string& key) override;

 private:
  // What is ignored of the caches goes to `problems`. Without the agents' liveness (liveness()).
  dataplane::ClusterView view(std::vector<dataplane::Problem>* problems) const;
  // The nodes with an agent (an agent Lease and a Node), this one always.
  std::map<std::string, PeerMesh::Member> members(const dataplane::ClusterView& v) const;
  // Each member's liveness at `now` (view.leases), from the mesh (a dry run: from the Leases).
  std::vector<dataplane::LeaseView> liveness(const dataplane::ClusterView& v,
                                             Clock::TimePoint now) const;
  // Until when this node may hold what it holds: its lease's end (a dry run: its renewals'),
  // at most the restart grace ahead; nullopt when it may hold nothing.
  std::optional<Clock::TimePoint> holdUntil(Clock::TimePoint now) const;
  // The next moment a Lease-judged liveness expires (a dry run's), if any is fresh at `now`.
  std::optional<Clock::TimePoint> nextExpiry(Clock::TimePoint now) const;
  // After each heartbeat round: the kernel fence's held addresses live until the lease's end.
  void refreshFence();
  // Stopping for a restart: asks the peers for the restart grace and fences what this node holds
  // until its end.
  static net::awaitable<void> leave(Agent* self);
  void makeAppliers();
  // Everything of the desired kernel state but the nft table.
  struct Devices {
    std::vector<dataplane::Link> links;
    std::vector<dataplane::LinkAddress> addresses;
    std::vector<dataplane::Rule> rules;
    std::vector<dataplane::Route> routes;
    std::vector<dataplane::Neighbour> neighbours;
    std::vector<dataplane::FdbEntry> fdb;
    std::vector<dataplane::Sysctl> sysctls;

    friend bool operator==(const Devices&, const Devices&) = default;
  };
  static Devices devicesOf(const dataplane::KernelState& k);
  Result<int, std::string> apply(const dataplane::DesiredState& want, Clock::TimePoint now);
  // Starts announcing newly held egress IPs and sends the rounds that are due, while `fresh`
  // (this agent is within its fence time); releases the conntrack entries of addresses no longer
  // held.
  void announce(const dataplane::DesiredState& want, Clock::TimePoint now, bool fresh);
  // Logs the problems that were not there at the last sync (an ignored slice or a contested
  // egress IP, fail closed, must be visible without a line per problem every second) and counts
  // them by kind.
  void warnAbout(const std::vector<dataplane::Problem>& problems);
  void report(AgentReport next);
  // Takes out of the kernel everything the agent puts there: the nft tables (its own and the
  // fence's), the links with their addresses and neighbours (proxy ARP/NDP entries included),
  // the rules and routes. Sysctls stay (the init container set them, and other software may
  // rely on forwarding). Each step runs even if one before it failed.
  void removeKernelState(const std::string& why);
  static net::awaitable<void> runThenCleanUp(Agent* self, net::awaitable<void> workers);

  AgentOptions options_;
  LeaseRenewer& renewer_;
  AgentMetrics metrics_;
  cache::SharedIndexInformer<core::Node>* nodes_ = nullptr;
  cache::SharedIndexInformer<networking::v1alpha1::EgressPolicySlice>* slices_ = nullptr;
  cache::SharedIndexInformer<networking::v1alpha1::IPAMPool>* pools_ = nullptr;
  cache::SharedIndexInformer<networking::v1alpha1::OperatorConfig>* configs_ = nullptr;
  cache::SharedIndexInformer<coordination::Lease>* leases_ = nullptr;
  cache::SharedIndexInformer<apps::DaemonSet>* owner_ = nullptr;
  // Whether this process has seen the owner DaemonSet.
  bool ownerSeen_ = false;
  // The peers' Leases by name, as this process observed them change.
  leaderelection::ObservedLeases observed_;
  std::unique_ptr<dataplane::LinkApplier> links_;
  std::unique_ptr<dataplane::RoutingApplier> routing_;
  std::unique_ptr<dataplane::NftApplier> nft_;
  dataplane::SysctlApplier sysctls_;
  dataplane::Announcer announcer_;
  dataplane::ConntrackCleaner conntrack_;
  // Egress IPs being announced: when the next round is due and how many remain.
  struct Pending {
    Clock::TimePoint next;
    int left = 0;
  };
  std::map<ipam::Address, Pending> announcing_;
  std::set<ipam::Address> held_;
  std::set<std::string> problems_;
  // The report last published; nullopt before the first.
  std::optional<AgentReport> reported_;
  // The problems of the last sync, as an annotation.
  std::string problemsReport_;
  // The slices' resourceVersion of the last sync that programmed the kernel in full: a failed
  // apply reports the one before it, since what the failed one withdrew may still be answered.
  std::string programmedSlices_;
  // What the last full pass of apply() put in the kernel besides the nft table, and when (used
  // by the kernel_ thread only).
  std::optional<Devices> devices_;
  Clock::TimePoint devicesChecked_{};
  // The kernel fence, written by the syncs (on kernel_) and refreshed after every heartbeat
  // round (on fenceThread_): one applier and the last state, behind a lock.
  struct FenceKeeper;
  std::unique_ptr<FenceKeeper> fence_;
  // A refresh is in flight (shared with its coroutine, which may end after the agent).
  std::shared_ptr<bool> fenceBusy_ = std::make_shared<bool>(false);
  // The heartbeats; nullptr in a dry run. Started by the first sync.
  std::unique_ptr<PeerMesh> mesh_;
  bool meshStarted_ = false;
  // Where the syncs compute and program the kernel, off the loop. Last: destroyed first, so the
  // piece in flight ends while everything it uses still exists.
  WorkerThread fenceThread_;
  WorkerThread kernel_;
};

// The device that has `ip` (getifaddrs), or "".
std::string deviceWithAddress(const ipam::Address& ip);
// A device's MTU, or 0.
uint32_t deviceMtu(const std::string& dev);

}  // namespace egress::agent
