// File: time.h
//
// metav1.Time and metav1.MicroTime on the wire: RFC 3339 strings. Both decode to a
// system_clock time point; they differ only in how they are written back (Time with whole
// seconds, MicroTime with exactly six fractional digits, both in UTC with "Z"), which is what
// the API server stores, so a value that went through the server compares equal to ours only if
// we round the same way.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace egress::meta {

using Time = std::chrono::system_clock::time_point;

// Parses "2026-11-30T03:27:13Z", "2026-11-30T03:27:13.123456789Z" or "...+02:00". Fractional
// digits past nanoseconds are truncated. nullopt if `s` is not RFC 3339, or is outside what Time
// represents (int64 nanoseconds: 1677-09-21 to 2262-04-11).
std::optional<Time> parseRfc3339(std::string_view s);

// "2026-11-30T03:27:13Z": UTC, sub-second part truncated (metav1.Time).
std::string formatRfc3339(Time t);

// "2026-11-30T03:27:13.123456Z": UTC, truncated to microseconds (metav1.MicroTime).
std::string formatRfc3339Micro(Time t);

// `t` as metav1.Time keeps it after a round trip through the API server.
Time truncateToSeconds(Time t);

}  // namespace egress::meta
