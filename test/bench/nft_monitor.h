// File: nft_monitor.h
//
// What a network namespace's kernel says of its nftables transactions, as `nft monitor` hears
// it: a netlink socket in the NFNLGRP_NFTABLES group, opened inside that namespace by a thread
// of its own that timestamps each notification on arrival (the kernel sends them when a
// transaction commits). agent_bench uses it to time a source pod from the API write that adds it
// to the moment its address is an element of the agent's table, and to size the transactions
// the agent sends. Only elements of one table are looked at; a key is the element's raw bytes (4
// for an IPv4 address, 16 for an IPv6 one).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace egress::bench {

class NftMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  // One committed transaction's elements of the table, as notified.
  struct Transaction {
    Clock::time_point at;
    int added = 0;
    int removed = 0;
    // Its other messages for the table: the table, chains, rules, sets and objects made,
    // changed or deleted.
    int objects = 0;
    // The notifications' bytes (netlink headers included).
    size_t bytes = 0;
    // The watched keys it added.
    std::vector<std::string> watched;
  };

  explicit NftMonitor(std::string table) : table_(std::move(table)) {}
  ~NftMonitor() { stop(); }
  NftMonitor(const NftMonitor&) = delete;
  NftMonitor& operator=(const NftMonitor&) = delete;

  // Listens in network namespace /run/netns/`ns`; "" or why it cannot.
  std::string start(const std::string& ns);
  void stop();

  // Records when `key` is first added from now on.
  void watch(const std::string& key);
  // When the watched `key` was first added, if it was.
  std::optional<Clock::time_point> added(const std::string& key) const;
  // The transactions committed since `since` that touched the table.
  std::vector<Transaction> transactionsSince(Clock::time_point since) const;
  // Notifications the kernel could not queue to us (ENOBUFS): figures may miss some.
  int overflows() const { return overflows_.load(); }

 private:
  void loop(int fd);
  void parse(const char* data, size_t len, Clock::time_point at);

  std::string table_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> overflows_{0};
  mutable std::mutex mu_;
  std::set<std::string> watching_;
  std::map<std::string, Clock::time_point> added_;
  std::vector<Transaction> done_;
  Transaction open_;
};

// The raw bytes of an IP address as an nftables key ("" if it is not one).
std::string addressKey(const std::string& ip);

}  // namespace egress::bench
