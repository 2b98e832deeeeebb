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

std::optional<NftApplier::Tag> NftApplier::tag(const std::string& tableName) {
  auto listing = run("list chain inet " + tableName + " classify");
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
    if (!rule.HasMember("comment") || !rule["comment"].IsString() || !rule.HasMember("handle") ||
        !rule["handle"].IsUint64()) {
      continue;
    }
    std::string_view comment = rule["comment"].GetString();
    if (comment.starts_with(prefix)) {
      return Tag{std::string(comment.substr(prefix.size())), rule["handle"].GetUint64()};
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
  auto rendered = renderNftJson(table);
  if (kernel && kernel->digest == rendered.digest) {
    if (!applied_ || applied_->digest != rendered.digest) {
      applied_ = Applied{table, rendered.digest, nftShapeDigest(table)};
    }
    return Change{};
  }
  std::string shape = nftShapeDigest(table);
  if (kernel && applied_ && applied_->digest == kernel->digest && applied_->shape == shape) {
    auto delta = renderNftDelta(applied_->table, table, kernel->handle, rendered.digest);
    if (run(delta.json)) {
      applied_ = Applied{table, rendered.digest, std::move(shape)};
      return Change{Change::Kind::kElements, delta.elements};
    }
    // The kernel refused it (someone changed the table under us): replace it whole below.
  }
  applied_.reset();
  auto r = run(rendered.json);
  if (!r) {
    return unexpected(r.error());
  }
  applied_ = Applied{table, rendered.digest, std::move(shape)};
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
