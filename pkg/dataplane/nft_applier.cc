#include "pkg/dataplane/nft_applier.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include <rapidjson/document.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <nftables/libnftables.h>

namespace egress::dataplane {

NftApplier::NftApplier() : ctx_(nft_ctx_new(NFT_CTX_DEFAULT)), netfilter_(NETLINK_NETFILTER) {
  nft_ctx_buffer_output(ctx_);
  nft_ctx_buffer_error(ctx_);
  nft_ctx_output_set_flags(ctx_, NFT_CTX_OUTPUT_JSON);
}

NftApplier::~NftApplier() {
  nft_ctx_free(ctx_);
}

Result<std::string, std::string> NftApplier::run(const std::string& commands) {
  int rc = nft_run_cmd_from_buffer(ctx_, commands.c_str());
  std::string out = nft_ctx_get_output_buffer(ctx_);
  std::string err = nft_ctx_get_error_buffer(ctx_);
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
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
  nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
  nfg->nfgen_family = NFPROTO_INET;
  nfg->version = NFNETLINK_V0;
  nfg->res_id = 0;
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
  auto done = run(renderFence(state));
  if (!done) {
    return unexpected("fence: " + done.error());
  }
  return Ok{};
}

Result<Ok, std::string> NftApplier::removeFence() {
  auto done = run(dataplane::removeFence());
  if (!done) {
    return unexpected("removing the fence: " + done.error());
  }
  return Ok{};
}

Result<std::map<std::string, NftCount>, std::string> NftApplier::counters(
    const std::string& tableName) {
  // Its counters only: the whole table would be every set element of every policy, each sync.
  auto listing = run("list counters table inet " + tableName);
  if (!listing) {
    return unexpected(listing.error());
  }
  rapidjson::Document d;
  d.Parse(listing->c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("nftables") || !d["nftables"].IsArray()) {
    return unexpected(std::string("listing table ") + tableName + ": not the JSON expected");
  }
  std::map<std::string, NftCount> out;
  for (const auto& item : d["nftables"].GetArray()) {
    if (!item.IsObject() || !item.HasMember("counter") || !item["counter"].IsObject()) {
      continue;
    }
    const auto& c = item["counter"];
    if (c.HasMember("name") && c["name"].IsString() && c.HasMember("packets") &&
        c["packets"].IsUint64() && c.HasMember("bytes") && c["bytes"].IsUint64()) {
      out[c["name"].GetString()] = {c["packets"].GetUint64(), c["bytes"].GetUint64()};
    }
  }
  return out;
}

Result<NftApplier::Change, std::string> NftApplier::apply(const NftTable& table) {
  const auto kernel = tag(table.name);
  // At rest (every sync, once a second) nothing is rendered: the table is what was applied, and
  // the kernel still has its digest.
  if (kernel && applied_ && applied_->digest == kernel->digest && applied_->table == table) {
    return Change{};
  }
  const std::string digest = nftDigest(table);
  if (kernel && kernel->digest == digest) {
    if (!applied_ || applied_->digest != digest) {
      applied_ = Applied{table, digest, nftShapeDigest(table)};
    }
    return Change{};
  }
  std::string shape = nftShapeDigest(table);
  if (kernel && applied_ && applied_->digest == kernel->digest && applied_->shape == shape) {
    auto delta = renderNftDelta(applied_->table, table, digest);
    if (run(delta.json)) {
      applied_ = Applied{table, digest, std::move(shape)};
      return Change{Change::Kind::kElements, delta.elements};
    }
    // The kernel refused it (someone changed the table under us): replace it whole below.
  }
  applied_.reset();
  auto r = run(renderNftJson(table).json);
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
