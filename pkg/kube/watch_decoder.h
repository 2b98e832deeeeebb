// File: watch_decoder.h
//
// Incremental decoder of a watch response body: newline-delimited JSON watch events
// ({"type":"ADDED","object":{...}}), fed with whatever byte ranges the network delivers. An
// event may be split anywhere across reads, several may arrive in one read, and one event may
// be many megabytes; each complete line becomes one WatchEvent, decoded when it is asked for.
// No Beast here, so it is unit tested byte by byte.
//
// Memory: one stream decodes thousands of events, so it reuses its memory instead of building
// each event in a fresh RapidJSON pool. Each event's values live in an arena (a buffer under a
// MemoryPoolAllocator) that the event owns; when the event is destroyed the arena goes back to
// its decoder for the next event (or is freed, if the decoder is gone: an event stays valid for
// as long as its owner keeps it, whatever happens to the stream). An arena that overflowed is
// rebuilt bigger (up to 1 MiB), so the next event of that size fits in one block. RapidJSON's
// parse stacks come from ParseStackAllocator, which keeps freed blocks for the next parse.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "pkg/kube/errors.h"

namespace egress::kube {

enum class WatchEventType { Added, Modified, Deleted, Bookmark, Error };

const char* toString(WatchEventType type);

// RapidJSON allocator for parse stacks: RapidJSON grows a stack from nothing for every parse
// and frees it after (Free is static), so this keeps up to a few freed blocks per thread and
// hands them to the next parse.
class ParseStackAllocator {
 public:
  // RapidJSON's Allocator concept fixes these names.
  static const bool kNeedFree = true;
  void* Malloc(size_t size);                                           // NOLINT
  void* Realloc(void* original, size_t originalSize, size_t newSize);  // NOLINT
  static void Free(void* ptr);                                         // NOLINT
};

using EventDocument =
    rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>,
                               ParseStackAllocator>;

namespace watch_detail {
class EventArena;
struct ArenaPool;
// Gives an arena back to its decoder's pool when the event holding it goes away.
struct ArenaReturn {
  std::weak_ptr<ArenaPool> pool;
  void operator()(EventArena* arena) const;
};
using ArenaHandle = std::unique_ptr<EventArena, ArenaReturn>;
}  // namespace watch_detail

struct WatchEvent {
  WatchEvent() = default;
  // An event whose document lives in `arena` (the decoder's constructor).
  explicit WatchEvent(watch_detail::ArenaHandle arena);

  WatchEventType type = WatchEventType::Added;
  // Declared before `doc`, so that it outlives it.
  watch_detail::ArenaHandle arena;
  // The whole decoded event line; object() is its "object" member.
  EventDocument doc;

  const rapidjson::Value& object() const;
  // For Error events: the Status the server sent (e.g. 410 Gone / Expired) as an Error.
  Error toError() const;
};

class WatchDecoder {
 public:
  // An event line (its newline not counted) longer than maxEventBytes is a decode error,
  // however the line arrives.
  explicit WatchDecoder(size_t maxEventBytes = size_t{256} << 20);

  // Room for `size` more bytes at the end of what is held; read into it, then commit() what
  // was read. The pointer is valid until the next prepare().
  char* prepare(size_t size);
  void commit(size_t size);
  // The next complete event, or nullopt until more bytes arrive.
  Result<std::optional<WatchEvent>> next();
  // prepare, commit and next in one: consumes bytes and appends every event they complete.
  Result<Ok> feed(std::string_view bytes, std::vector<WatchEvent>& out);
  // The stream ended: anything but whitespace left over is a truncated event.
  Result<Ok> finish() const;
  // Bytes held that no event has been decoded from yet.
  size_t pending() const { return end_ - begin_; }

 private:
  Result<WatchEvent> decodeLine(std::string_view line);
  Error eventTooLarge() const;

  size_t maxEventBytes_;
  std::vector<char> buffer_;
  size_t begin_ = 0;    // the first byte not yet decoded
  size_t scanned_ = 0;  // bytes after begin_ already searched for a newline
  size_t end_ = 0;      // the end of what was committed
  std::shared_ptr<watch_detail::ArenaPool> arenas_;
};

}  // namespace egress::kube
