// File: nft_applier.h
//
// Puts egw-agent's nftables table into the kernel through libnftables' JSON API, in place: the
// table's tag element carries the digest of what was applied (nft_ruleset.h), so an applier, even a
// fresh one after an agent restart, leaves the table alone when the desired digest is the
// kernel's. A change in proportion to what changed: when the kernel still has what this applier
// last applied and the new table has the same shape (nftShapeDigest: only map and set elements
// differ, as when a pod comes or goes), one transaction deletes and adds those elements and
// rewrites the tag. Anything else (a first apply, a changed shape, a kernel that is not what was
// applied, a delta the kernel refuses) replaces the table whole: the recovery path. And the
// fence tables (fence.h), whose held elements time out unless refreshed.
// Used serially: one command at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pkg/base/result.h"
#include "pkg/dataplane/fence.h"
#include "pkg/dataplane/nft_ruleset.h"
#include "pkg/dataplane/rtnetlink.h"

namespace egress::dataplane {

class NftApplier {
 public:
  NftApplier();
  ~NftApplier();
  NftApplier(const NftApplier&) = delete;
  NftApplier& operator=(const NftApplier&) = delete;

  struct Change {
    enum class Kind {
      kNone,      // the kernel had this digest
      kElements,  // elements deleted and added in one transaction; counters kept
      kReplaced,  // the table made anew; its counters start at 0
    };
    Kind kind = Kind::kNone;
    size_t elements = 0;  // with kElements: how many were deleted or added
  };
  // `beforeReplace` runs right before the table is replaced whole (its counters then start
  // again at 0), whatever the reason: nothing applied by this applier yet, another shape, a
  // kernel table that is not what was applied, an element transaction the kernel refused.
  Result<Change, std::string> apply(const NftTable& table,
                                    const std::function<void()>& beforeReplace = {});
  // Removes the table; succeeds when there is none.
  Result<Ok, std::string> remove(const std::string& tableName);
  // The digest in the kernel's table's tag element; nullopt when the table or the tag is absent.
  std::optional<std::string> appliedDigest(const std::string& tableName);
  // `nft -j list table inet <name>`; an error when there is no such table.
  Result<std::string, std::string> list(const std::string& tableName);
  // The fence tables (fence.h) as `state` says: their rules, the known egress IPs, the held ones
  // timing out after state.remaining. One transaction; run it on every sync that holds. Where
  // this applier wrote the same rules and known sets before, only the held elements.
  Result<Ok, std::string> applyFence(const FenceState& state);
  // Removes the fence tables; succeeds when there are none.
  Result<Ok, std::string> removeFence();
  // The addresses the kernel fence holds now (the elements of its held sets that have not timed
  // out): what a restarted agent's predecessor held and may still. None without the tables.
  Result<std::vector<ipam::Address>, std::string> fenceHeld();
  // Keeps a promise about `node` in the kernel for `remaining` (fence.h renderPromise).
  Result<Ok, std::string> promise(std::string_view node, std::chrono::milliseconds remaining);
  // The promises kept, by key (promiseKey), with at least the time they have left (the kernel
  // tells whole seconds: one more is added). None without the tables.
  Result<std::map<uint32_t, std::chrono::milliseconds>, std::string> promises();
  // What each named counter of the table has counted since the table was made.
  Result<std::map<std::string, NftCount>, std::string> counters(const std::string& tableName);

 private:
  Result<std::string, std::string> run(const std::string& commands);
  // The digest in the table's tag element, read through a netlink dump of set `tag` alone (the
  // table's other sets may hold a hundred thousand elements).
  struct Tag {
    std::string digest;
  };
  std::optional<Tag> tag(const std::string& tableName);

  Rtnetlink netfilter_;
  // What this applier last put in the kernel, and its digest and shape digest.
  struct Applied {
    NftTable table;
    std::string digest;
    std::string shape;
  };
  std::optional<Applied> applied_;
  // What the last full fence transaction wrote, and how many refreshes of the held elements alone
  // followed it.
  static constexpr int kFenceRewriteEvery = 60;
  struct Fence {
    std::string tunnel;
    std::vector<ipam::Address> known;
    int refreshes = 0;
  };
  std::optional<Fence> fence_;
};

}  // namespace egress::dataplane
