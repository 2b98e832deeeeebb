#include "pkg/controller/agentlease/agents.h"

#include <algorithm>
#include <limits>

#include <rapidjson/document.h>
#include <spdlog/spdlog.h>

#include "pkg/controller/names.h"
#include "pkg/controller/resource_version.h"

namespace egress::controller {

std::string agentLeaseNode(const coordination::Lease& lease) {
  const auto& name = lease.metadata.name;
  if (!name.starts_with(kAgentLeasePrefix) || name.size() == kAgentLeasePrefix.size()) {
    return "";
  }
  return name.substr(kAgentLeasePrefix.size());
}

std::set<ipam::Address> programmedAddresses(const coordination::Lease& lease) {
  std::set<ipam::Address> out;
  auto it = lease.metadata.annotations.find(std::string(kProgrammedAnnotation));
  if (it == lease.metadata.annotations.end()) {
    return out;
  }
  std::string_view text = it->second;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    if (auto a = ipam::parseAddress(text.substr(0, comma))) {
      out.insert(*a);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::map<std::string, ReportedProblem> reportedProblems(const coordination::Lease& lease) {
  std::map<std::string, ReportedProblem> out;
  auto it = lease.metadata.annotations.find(std::string(kProblemsAnnotation));
  if (it == lease.metadata.annotations.end() || it->second.empty()) {
    return out;
  }
  rapidjson::Document doc;
  doc.Parse(it->second.data(), it->second.size());
  if (doc.HasParseError() || !doc.IsArray()) {
    return out;
  }
  auto text = [](const rapidjson::Value& o, const char* k) {
    auto m = o.FindMember(k);
    return m != o.MemberEnd() && m->value.IsString()
               ? std::string(m->value.GetString(), m->value.GetStringLength())
               : std::string();
  };
  for (const auto& item : doc.GetArray()) {
    if (!item.IsObject()) {
      continue;
    }
    ReportedProblem p{text(item, "uid"), text(item, "policy"), text(item, "reason"),
                      text(item, "message")};
    // The agent cuts its messages; a Lease anyone else wrote is held to the same bound, so a
    // condition's message stays readable.
    if (p.message.size() > kMaxProblemMessage) {
      p.message.resize(kMaxProblemMessage);
      p.message += "...";
    }
    if (p.uid.empty()) {
      continue;
    }
    if (std::find(std::begin(kDataplaneProblemReasons), std::end(kDataplaneProblemReasons),
                  p.reason) == std::end(kDataplaneProblemReasons)) {
      p.reason = std::string(kReasonDataplaneProblem);
    }
    out.emplace(p.uid, std::move(p));
  }
  return out;
}

bool Agents::observe(const coordination::Lease& lease, Clock::TimePoint now) {
  const std::string node = agentLeaseNode(lease);
  if (node.empty()) {
    return false;
  }
  leases_.observe(node, lease, now);
  auto observed = lease.metadata.annotations.find(std::string(kObservedSlicesAnnotation));
  observedSlices_[node] =
      observed == lease.metadata.annotations.end() ? std::string() : observed->second;
  auto reported = programmedAddresses(lease);
  auto problems = reportedProblems(lease);
  auto& known = programmed_[node];
  auto& knownProblems = problems_[node];
  if (known == reported && knownProblems == problems) {
    return false;
  }
  known = std::move(reported);
  knownProblems = std::move(problems);
  return true;
}

void Agents::forget(const std::string& node) {
  leases_.forget(node);
  programmed_.erase(node);
  problems_.erase(node);
  observedSlices_.erase(node);
}

bool Agents::live(const std::string& node, Clock::TimePoint now) const {
  return leases_.fresh(node, now);
}

std::optional<Clock::TimePoint> Agents::expiry(const std::string& node) const {
  return leases_.expiry(node);
}

const std::set<ipam::Address>& Agents::programmed(const std::string& node) const {
  static const std::set<ipam::Address> kNone;
  auto it = programmed_.find(node);
  return it == programmed_.end() ? kNone : it->second;
}

const std::map<std::string, ReportedProblem>& Agents::problems(const std::string& node) const {
  static const std::map<std::string, ReportedProblem> kNone;
  auto it = problems_.find(node);
  return it == problems_.end() ? kNone : it->second;
}

std::vector<NodeProblem> Agents::problemsOf(const std::string& uid, Clock::TimePoint now) const {
  std::vector<NodeProblem> out;
  for (const auto& [node, reported] : problems_) {
    auto it = reported.find(uid);
    if (it != reported.end() && live(node, now)) {
      out.push_back({node, it->second.reason, it->second.message});
    }
  }
  return out;
}

std::map<ipam::Address, std::set<std::string>> Agents::claims(Clock::TimePoint now) const {
  std::map<ipam::Address, std::set<std::string>> out;
  for (const auto& [node, reported] : programmed_) {
    if (!live(node, now)) {
      continue;
    }
    for (const auto& a : reported) {
      out[a].insert(node);
    }
  }
  return out;
}

std::set<std::string> Agents::nodes() const {
  std::set<std::string> out;
  for (const auto& [node, reported] : programmed_) {
    out.insert(node);
  }
  return out;
}

bool Agents::caughtUp(const std::string& version, Clock::TimePoint now) const {
  for (const auto& [node, observed] : observedSlices_) {
    if (live(node, now) && !versionReached(observed, version)) {
      return false;
    }
  }
  return true;
}

bool Agents::withdrawn(const ipam::Address& address, const std::string& version,
                       const std::string& key, Clock::TimePoint now) {
  if (auto it = withdrawals_.find(address); it != withdrawals_.end()) {
    return !caughtUp(it->second.version, now);
  }
  if (caughtUp(version, now)) {
    return false;
  }
  withdrawals_[address] = {version, key};
  spdlog::info(
      "egressgateway: policy {}: {} stays held until every live agent reports the slices at "
      "version {} or later; behind: {}",
      key, address.toString(), version, behind(version, now));
  return true;
}

std::string Agents::behind(const std::string& version, Clock::TimePoint now) const {
  std::string out;
  for (const auto& [node, observed] : observedSlices_) {
    if (live(node, now) && !versionReached(observed, version)) {
      out += (out.empty() ? "" : ", ") + node + " (" + (observed.empty() ? "none" : observed) + ")";
    }
  }
  return out;
}

void Agents::forgetWithdrawal(const ipam::Address& address) {
  withdrawals_.erase(address);
}

bool Agents::startPending(Clock::TimePoint now) const {
  return !startVersion_.empty() && !caughtUp(startVersion_, now);
}

std::set<std::string> Agents::settle(Clock::TimePoint now) {
  // It runs on every agent Lease event (each agent renews every 2 s): one pass over the agents,
  // then one comparison per withdrawal, not a pass over the agents per withdrawal. Every live
  // agent has reached a version when the least version a live agent reports has; a report that
  // is no integer (or none) sends each question to caughtUp(), which compares agent by agent.
  bool anyLive = false;
  bool comparable = true;
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (const auto& [node, observed] : observedSlices_) {
    if (!live(node, now)) {
      continue;
    }
    anyLive = true;
    const auto v = versionNumber(observed);
    if (!v) {
      comparable = false;
      break;
    }
    least = std::min(least, *v);
  }
  auto reached = [&](const std::string& version) {
    if (!anyLive) {
      return true;
    }
    const auto v = comparable ? versionNumber(version) : std::nullopt;
    return v ? least >= *v : caughtUp(version, now);
  };
  std::set<std::string> keys;
  if (!startVersion_.empty() && reached(startVersion_)) {
    startVersion_.clear();
    keys.swap(startWaiting_);
  }
  for (auto& [address, w] : withdrawals_) {
    const bool caught = reached(w.version);
    if (caught && !w.settled) {
      keys.insert(w.key);
    }
    w.settled = caught;
  }
  return keys;
}

}  // namespace egress::controller
