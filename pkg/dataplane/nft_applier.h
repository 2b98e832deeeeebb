// File: nft_applier.h
//
// Puts egw-agent's nftables table into the kernel through libnftables' JSON API, in place: the
// table's tag rule carries the digest of what was applied (nft_ruleset.h), so an applier, even a
// fresh one after an agent restart, replaces the table only when the desired digest differs from
// the kernel's; and the fence tables (fence.h), whose held elements time out unless refreshed.
// One libnftables context, used serially (it is not thread-safe).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "pkg/base/result.h"
#include "pkg/dataplane/fence.h"
#include "pkg/dataplane/nft_ruleset.h"

struct nft_ctx;

namespace egress::dataplane {

class NftApplier {
 public:
  NftApplier();
  ~NftApplier();
  NftApplier(const NftApplier&) = delete;
  NftApplier& operator=(const NftApplier&) = delete;

  // True if the table was replaced, false if the kernel already had this digest.
  Result<bool, std::string> apply(const NftTable& table);
  // Removes the table; succeeds when there is none.
  Result<Ok, std::string> remove(const std::string& tableName);
  // The digest in the kernel's table's tag rule; nullopt when the table or the tag is absent.
  std::optional<std::string> appliedDigest(const std::string& tableName);
  // `nft -j list table inet <name>`; an error when there is no such table.
  Result<std::string, std::string> list(const std::string& tableName);
  // The fence tables (fence.h) as `state` says: their rules, the known egress IPs, the held ones
  // timing out after state.remaining. One transaction; run it on every sync that holds.
  Result<Ok, std::string> applyFence(const FenceState& state);
  // Removes the fence tables; succeeds when there are none.
  Result<Ok, std::string> removeFence();
  // What each named counter of the table has counted since the table was made.
  Result<std::map<std::string, NftCount>, std::string> counters(const std::string& tableName);

 private:
  Result<std::string, std::string> run(const std::string& commands);

  nft_ctx* ctx_;
};

}  // namespace egress::dataplane
