#include "pkg/dataplane/nft_applier.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/base/heap.h"
#include <arpa/inet.h>
#include <endian.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <nftables/libnftables.h>

namespace egress::dataplane {

NftApplier::NftApplier() : netfilter_(NETLINK_NETFILTER) {}

NftApplier::~NftApplier() = default;

// A context of its own for each command. After a command a libnftables context keeps its cache of
// the kernel's ruleset: every set and chain of every table (9.6 MB at 5,000 policies), and after a
// replacement the whole parsed table with its elements (178 MB at 100,000 source pods; both
// measured with heaptrack), until the next command. That cache is fetched again whenever the
// ruleset's generation moved, which each of our commits does, so keeping it saved nothing; and
// while it lived, releasing free heap could not give the replacement's pages back (the agent stayed
// at 290 MiB of RSS where 100 MiB were in use). A new context costs 26 us.
Result<std::string, std::string> NftApplier::run(const std::string& commands) {
  std::unique_ptr<nft_ctx, void (*)(nft_ctx*)> ctx(nft_ctx_new(NFT_CTX_DEFAULT), nft_ctx_free);
  if (ctx == nullptr) {
    return unexpected(std::string("nft: cannot make a libnftables context"));
  }
  nft_ctx_buffer_output(ctx.get());
  nft_ctx_buffer_error(ctx.get());
  nft_ctx_output_set_flags(ctx.get(), NFT_CTX_OUTPUT_JSON);
  int rc = nft_run_cmd_from_buffer(ctx.get(), commands.c_str());
  std::string out = nft_ctx_get_output_buffer(ctx.get());
  std::string err = nft_ctx_get_error_buffer(ctx.get());
  if (rc != 0) {
    // Result<string, string>: only unexpected() makes an error of a string.
    return unexpected("nft: " + (err.empty() ? std::string("failed") : err));
  }
  return out;
}

Result<std::string, std::string> NftApplier::list(const std::string& tableName) {
  return run("list table inet " + tableName);
}

namespace {

// A dump request of nf_tables message `type` in the inet family, at the start of `buf`.
nlmsghdr* dumpRequest(char* buf, uint16_t type) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = NFPROTO_INET;
  nfg->version = NFNETLINK_V0;
  nfg->res_id = 0;
  return nlh;
}

// An element's comment, from its userdata: type-length-value records, the comment's type 0
// (libnftnl's NFTNL_UDATA_SET_ELEM_COMMENT), its value NUL-terminated.
std::string elementComment(const nlattr* userdata) {
  const auto* p = static_cast<const uint8_t*>(mnl_attr_get_payload(userdata));
  const uint16_t len = mnl_attr_get_payload_len(userdata);
  for (size_t at = 0; at + 2 <= len;) {
    const uint8_t type = p[at];
    const uint8_t size = p[at + 1];
    if (at + 2 + size > len) {
      break;
    }
    if (type == 0) {
      const auto* text = reinterpret_cast<const char*>(p + at + 2);
      return std::string(text, strnlen(text, size));
    }
    at += 2 + size;
  }
  return "";
}

struct TagDump {
  std::string prefix;
  std::optional<std::string> digest;
};

int onElement(const nlattr* attr, void* data) {
  auto& d = *static_cast<TagDump*>(data);
  Attrs a(NFTA_SET_ELEM_MAX);
  mnl_attr_parse_nested(attr, collectAttr, &a);
  if (!d.digest && a[NFTA_SET_ELEM_USERDATA] != nullptr) {
    const std::string comment = elementComment(a[NFTA_SET_ELEM_USERDATA]);
    if (comment.starts_with(d.prefix)) {
      d.digest = comment.substr(d.prefix.size());
    }
  }
  return MNL_CB_OK;
}

int onElements(const nlmsghdr* nlh, void* data) {
  Attrs a(NFTA_SET_ELEM_LIST_MAX);
  mnl_attr_parse(nlh, sizeof(nfgenmsg), collectAttr, &a);
  if (a[NFTA_SET_ELEM_LIST_ELEMENTS] != nullptr) {
    mnl_attr_parse_nested(a[NFTA_SET_ELEM_LIST_ELEMENTS], onElement, data);
  }
  return MNL_CB_OK;
}

}  // namespace

// Through a netlink dump of set `tag` alone, not libnftables: to list even one set or chain it
// first fetches every set of the table with its elements, and the kernel looks each set up by
// name, so the time grows with the square of the sets (0.6 s at 5,000 sets, 6 s at 15,000).
std::optional<NftApplier::Tag> NftApplier::tag(const std::string& tableName) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = dumpRequest(buf.data(), NFT_MSG_GETSETELEM);
  mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, tableName.c_str());
  mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_SET, kTagSet);
  // A dump that another program's nft commit interrupts fails with EINTR: ask again, rather than
  // take the table for absent and replace it whole.
  for (int attempt = 0; attempt < 3; ++attempt) {
    TagDump d{nftTag(""), std::nullopt};
    if (netfilter_.request(nlh, onElements, &d).ok()) {
      return d.digest ? std::optional<Tag>(Tag{*d.digest}) : std::nullopt;
    }
    if (netfilter_.lastErrno() != EINTR) {
      break;
    }
  }
  return std::nullopt;
}

std::optional<std::string> NftApplier::appliedDigest(const std::string& tableName) {
  auto t = tag(tableName);
  return t ? std::optional<std::string>(t->digest) : std::nullopt;
}

Result<Ok, std::string> NftApplier::applyFence(const FenceState& state) {
  // Every sync refreshes the held elements' timeouts; the rules and known sets (every egress IP
  // of the cluster: 65 ms a sync at 2,000 of them, measured) are written only when they change,
  // when the refresh fails (the tables gone), and every kFenceRewriteEvery-th time (anything
  // else done to them by hand is undone within that many syncs).
  if (fence_ && fence_->tunnel == state.tunnel && fence_->known == state.known &&
      fence_->refreshes < kFenceRewriteEvery) {
    if (run(renderFenceHeld(state))) {
      ++fence_->refreshes;
      return Ok{};
    }
  }
  fence_.reset();
  auto done = run(renderFence(state));
  if (!done) {
    return unexpected("fence: " + done.error());
  }
  fence_ = Fence{state.tunnel, state.known, 0};
  return Ok{};
}

namespace {

// Each element of the set `nft list set` printed, as its value: an element with a timeout is
// {"elem": {"val": ..., "timeout": ..., "expires": ...}}, and `each` gets that inner object.
bool forEachElement(const std::string& listed,
                    const std::function<void(const rapidjson::Value&)>& each) {
  rapidjson::Document doc;
  doc.Parse(listed.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("nftables") ||
      !doc["nftables"].IsArray()) {
    return false;
  }
  for (const auto& item : doc["nftables"].GetArray()) {
    if (!item.IsObject() || !item.HasMember("set") || !item["set"].HasMember("elem") ||
        !item["set"]["elem"].IsArray()) {
      continue;
    }
    for (const auto& e : item["set"]["elem"].GetArray()) {
      each(e.IsObject() && e.HasMember("elem") && e["elem"].IsObject() ? e["elem"] : e);
    }
  }
  return true;
}

bool noSuchSet(const std::string& error) {
  return error.find("No such file or directory") != std::string::npos;
}

}  // namespace

Result<std::vector<ipam::Address>, std::string> NftApplier::fenceHeld() {
  std::vector<ipam::Address> out;
  for (const char* set : {"held4", "held6"}) {
    auto listed = run(std::string("list set inet ") + kFenceTable + " " + set);
    if (!listed) {
      if (noSuchSet(listed.error())) {
        continue;  // no fence: nothing held
      }
      return unexpected("reading the fence: " + listed.error());
    }
    const bool parsed = forEachElement(*listed, [&](const rapidjson::Value& e) {
      const rapidjson::Value& val = e.IsObject() && e.HasMember("val") ? e["val"] : e;
      if (val.IsString()) {
        if (auto a = ipam::parseAddress(val.GetString())) {
          out.push_back(*a);
        }
      }
    });
    if (!parsed) {
      return unexpected(std::string("reading the fence: unexpected output of nft"));
    }
  }
  return out;
}

Result<Ok, std::string> NftApplier::promise(std::string_view node,
                                            std::chrono::milliseconds remaining) {
  auto done = run(renderPromise(node, remaining));
  if (!done) {
    return unexpected("keeping a promise: " + done.error());
  }
  return Ok{};
}

Result<std::map<uint32_t, std::chrono::milliseconds>, std::string> NftApplier::promises() {
  std::map<uint32_t, std::chrono::milliseconds> out;
  auto listed = run(std::string("list set inet ") + kFenceTable + " promised");
  if (!listed) {
    if (noSuchSet(listed.error())) {
      return out;
    }
    return unexpected("reading the promises: " + listed.error());
  }
  const bool parsed = forEachElement(*listed, [&](const rapidjson::Value& e) {
    if (!e.IsObject() || !e.HasMember("val") || !e.HasMember("expires") ||
        !e["expires"].IsUint64()) {
      return;
    }
    // A mark is written as a number or as hex text, as the version of nft has it.
    const auto& val = e["val"];
    if (val.IsUint()) {
      out[val.GetUint()] = std::chrono::seconds(e["expires"].GetUint64() + 1);
    } else if (val.IsString()) {
      out[static_cast<uint32_t>(std::strtoul(val.GetString(), nullptr, 0))] =
          std::chrono::seconds(e["expires"].GetUint64() + 1);
    }
  });
  if (!parsed) {
    return unexpected(std::string("reading the promises: unexpected output of nft"));
  }
  return out;
}

Result<Ok, std::string> NftApplier::removeFence() {
  fence_.reset();
  auto done = run(dataplane::removeFence());
  if (!done) {
    return unexpected("removing the fence: " + done.error());
  }
  return Ok{};
}

namespace {

struct CounterDump {
  std::map<std::string, NftCount> counts;
};

int onCounterData(const nlattr* attr, void* data) {
  auto& a = *static_cast<Attrs*>(data);
  return collectAttr(attr, &a);
}

int onObject(const nlmsghdr* nlh, void* data) {
  auto& d = *static_cast<CounterDump*>(data);
  Attrs a(NFTA_OBJ_MAX);
  mnl_attr_parse(nlh, sizeof(nfgenmsg), collectAttr, &a);
  if (a[NFTA_OBJ_NAME] == nullptr || a[NFTA_OBJ_TYPE] == nullptr || a[NFTA_OBJ_DATA] == nullptr ||
      mnl_attr_validate(a[NFTA_OBJ_NAME], MNL_TYPE_NUL_STRING) < 0 ||
      mnl_attr_validate(a[NFTA_OBJ_TYPE], MNL_TYPE_U32) < 0 ||
      mnl_attr_validate(a[NFTA_OBJ_DATA], MNL_TYPE_NESTED) < 0 ||
      ntohl(mnl_attr_get_u32(a[NFTA_OBJ_TYPE])) != NFT_OBJECT_COUNTER) {
    return MNL_CB_OK;
  }
  Attrs c(NFTA_COUNTER_MAX);
  mnl_attr_parse_nested(a[NFTA_OBJ_DATA], onCounterData, &c);
  if (c[NFTA_COUNTER_PACKETS] == nullptr || c[NFTA_COUNTER_BYTES] == nullptr ||
      mnl_attr_validate(c[NFTA_COUNTER_PACKETS], MNL_TYPE_U64) < 0 ||
      mnl_attr_validate(c[NFTA_COUNTER_BYTES], MNL_TYPE_U64) < 0) {
    return MNL_CB_OK;
  }
  d.counts[mnl_attr_get_str(a[NFTA_OBJ_NAME])] = {
      be64toh(mnl_attr_get_u64(c[NFTA_COUNTER_PACKETS])),
      be64toh(mnl_attr_get_u64(c[NFTA_COUNTER_BYTES]))};
  return MNL_CB_OK;
}

}  // namespace

// Through a netlink dump of the table's counter objects, not libnftables: for `list counters`
// it first fetches every set of the table with its elements (measured: 2.1 s at 100,000 source
// pods), and the agent reads the counters on every sync.
Result<std::map<std::string, NftCount>, std::string> NftApplier::counters(
    const std::string& tableName) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = dumpRequest(buf.data(), NFT_MSG_GETOBJ);
  mnl_attr_put_strz(nlh, NFTA_OBJ_TABLE, tableName.c_str());
  mnl_attr_put_u32(nlh, NFTA_OBJ_TYPE, htonl(NFT_OBJECT_COUNTER));
  // As for the tag: a dump another program's commit interrupts fails with EINTR; ask again.
  for (int attempt = 0;; ++attempt) {
    CounterDump d;
    auto done = netfilter_.request(nlh, onObject, &d);
    if (done.ok()) {
      if (d.counts.empty() && !tag(tableName)) {
        // A dump names no table, so an absent one is an empty answer: say so, as listing would.
        return unexpected("listing the counters of table " + tableName + ": no such table");
      }
      return std::move(d.counts);
    }
    if (netfilter_.lastErrno() != EINTR || attempt == 2) {
      return unexpected("listing the counters of table " + tableName + ": " + done.error());
    }
  }
}

Result<NftApplier::Change, std::string> NftApplier::apply(
    const NftTable& table, const std::function<void()>& beforeReplace) {
  const auto kernel = tag(table.name);
  // At rest (every sync, once a second) nothing is hashed: the table is what was applied, and
  // the kernel still has its digest.
  if (kernel && applied_ && applied_->digest == kernel->digest && applied_->table == table) {
    return Change{};
  }
  // The shape digest renders the table's rules; a pod change leaves them as they were.
  std::string shape =
      applied_ && nftSameShape(applied_->table, table) ? applied_->shape : nftShapeDigest(table);
  const std::string digest = nftDigest(table, shape);
  // Only a kernel whose content this applier does not know (a restart) is taken at its digest's
  // word. One that still has what was applied, and a table that differs from it, needs the
  // change even if the digests agree (64 bits can collide).
  const bool known = kernel && applied_ && applied_->digest == kernel->digest;
  if (kernel && kernel->digest == digest && !known) {
    applied_ = Applied{table, digest, std::move(shape)};
    return Change{};
  }
  if (known && applied_->shape == shape) {
    auto delta = renderNftDelta(applied_->table, table, digest);
    if (run(delta.json)) {
      applied_ = Applied{table, digest, std::move(shape)};
      return Change{Change::Kind::kElements, delta.elements};
    }
    // The kernel refused it (someone changed the table under us): replace it whole below.
  }
  applied_.reset();
  if (beforeReplace) {
    beforeReplace();
  }
  auto r = run(renderNftJson(table).json);
  // libnftables parses a whole table's JSON into a tree many times its size, and its context
  // (gone now: run) freed it; give those pages back, or the agent's RSS stays at its largest
  // transaction's peak.
  base::releaseFreeHeap();
  if (!r) {
    return unexpected(r.error());
  }
  applied_ = Applied{table, digest, std::move(shape)};
  return Change{Change::Kind::kReplaced, 0};
}

Result<Ok, std::string> NftApplier::remove(const std::string& tableName) {
  applied_.reset();
  auto r = run(removeNftJson(tableName));
  if (!r) {
    return unexpected(r.error());
  }
  return Ok{};
}

}  // namespace egress::dataplane
