#include "pkg/dataplane/nft_applier.h"

#include <rapidjson/document.h>

#include <nftables/libnftables.h>

namespace egress::dataplane {

NftApplier::NftApplier() : ctx_(nft_ctx_new(NFT_CTX_DEFAULT)) {
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

std::optional<std::string> NftApplier::appliedDigest(const std::string& tableName) {
  auto listing = list(tableName);
  if (!listing) {
    return std::nullopt;
  }
  rapidjson::Document d;
  d.Parse(listing->c_str());
  if (d.HasParseError() || !d.IsObject() || !d.HasMember("nftables") || !d["nftables"].IsArray()) {
    return std::nullopt;
  }
  const std::string prefix = nftTag("");
  for (const auto& item : d["nftables"].GetArray()) {
    if (!item.IsObject() || !item.HasMember("rule")) {
      continue;
    }
    const auto& rule = item["rule"];
    if (!rule.HasMember("comment") || !rule["comment"].IsString() || !rule.HasMember("chain") ||
        std::string_view(rule["chain"].GetString()) != "classify") {
      continue;
    }
    std::string_view comment = rule["comment"].GetString();
    if (comment.starts_with(prefix)) {
      return std::string(comment.substr(prefix.size()));
    }
  }
  return std::nullopt;
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

Result<bool, std::string> NftApplier::apply(const NftTable& table) {
  auto rendered = renderNftJson(table);
  if (appliedDigest(table.name) == rendered.digest) {
    return false;
  }
  auto r = run(rendered.json);
  if (!r) {
    return unexpected(r.error());
  }
  return true;
}

Result<Ok, std::string> NftApplier::remove(const std::string& tableName) {
  auto r = run(removeNftJson(tableName));
  if (!r) {
    return unexpected(r.error());
  }
  return Ok{};
}

}  // namespace egress::dataplane
