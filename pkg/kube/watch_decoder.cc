#include "pkg/kube/watch_decoder.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>

namespace egress::kube {

const char* toString(WatchEventType type) {
  switch (type) {
    case WatchEventType::Added:
      return "ADDED";
    case WatchEventType::Modified:
      return "MODIFIED";
    case WatchEventType::Deleted:
      return "DELETED";
    case WatchEventType::Bookmark:
      return "BOOKMARK";
    case WatchEventType::Error:
      return "ERROR";
  }
  return "?";
}

// --- ParseStackAllocator ------------------------------------------------------------------------

namespace {

// Each block starts with its capacity; the caller gets the bytes after this header (16 bytes,
// so the payload keeps malloc's alignment).
constexpr size_t kHeader = 16;
constexpr size_t kMinBlock = 4 * 1024;
constexpr size_t kMaxCachedBlock = 256 * 1024;  // a huge event's stack is given back to malloc

size_t& capacityOf(void* payload) {
  return *reinterpret_cast<size_t*>(static_cast<char*>(payload) - kHeader);
}

// Freed blocks of this thread, for the next parse (a reader's and a document's stack are in
// use at once, and an event may be parsed while the previous one is still alive).
struct BlockCache {
  std::array<void*, 4> blocks{};
  size_t count = 0;
  ~BlockCache() {
    for (size_t i = 0; i < count; ++i) {
      std::free(static_cast<char*>(blocks[i]) - kHeader);
    }
  }
};

BlockCache& blockCache() {
  thread_local BlockCache cache;
  return cache;
}

}  // namespace

void* ParseStackAllocator::Malloc(size_t size) {
  if (size == 0) {
    return nullptr;  // as RapidJSON's CrtAllocator
  }
  auto& cache = blockCache();
  for (size_t i = 0; i < cache.count; ++i) {
    if (capacityOf(cache.blocks[i]) >= size) {
      void* block = cache.blocks[i];
      cache.blocks[i] = cache.blocks[--cache.count];
      return block;
    }
  }
  const size_t capacity = std::max(size, kMinBlock);
  char* raw = static_cast<char*>(std::malloc(kHeader + capacity));
  if (raw == nullptr) {
    return nullptr;
  }
  *reinterpret_cast<size_t*>(raw) = capacity;
  return raw + kHeader;
}

void* ParseStackAllocator::Realloc(void* original, size_t originalSize, size_t newSize) {
  if (original == nullptr) {
    return Malloc(newSize);
  }
  if (newSize == 0) {
    Free(original);
    return nullptr;
  }
  if (capacityOf(original) >= newSize) {
    return original;
  }
  void* grown = Malloc(std::max(newSize, 2 * capacityOf(original)));
  if (grown != nullptr) {
    std::memcpy(grown, original, std::min(originalSize, newSize));
  }
  Free(original);
  return grown;
}

void ParseStackAllocator::Free(void* ptr) {
  if (ptr == nullptr) {
    return;
  }
  auto& cache = blockCache();
  if (cache.count < cache.blocks.size() && capacityOf(ptr) <= kMaxCachedBlock) {
    cache.blocks[cache.count++] = ptr;
    return;
  }
  std::free(static_cast<char*>(ptr) - kHeader);
}

// --- Event arenas -------------------------------------------------------------------------------

namespace watch_detail {

namespace {
constexpr size_t kFirstArenaBytes = 32 * 1024;
constexpr size_t kMaxArenaBytes = 1024 * 1024;
constexpr size_t kKeptArenas = 2;  // the event being handled and the one being decoded
constexpr size_t kOverflowChunk = 64 * 1024;
ParseStackAllocator gStackAllocator;  // stateless: all its state is per thread
}  // namespace

class EventArena {
 public:
  explicit EventArena(size_t bytes) { build(bytes); }
  rapidjson::MemoryPoolAllocator<>& pool() { return *pool_; }

  // Empties the arena for the next event. One that overflowed its buffer into extra chunks is
  // rebuilt with a buffer big enough for what it held.
  void recycle() {
    const size_t used = pool_->Capacity();
    if (used > bytes_ && bytes_ < kMaxArenaBytes) {
      build(std::min(kMaxArenaBytes, std::bit_ceil(used)));
    } else {
      pool_->Clear();
    }
  }

 private:
  void build(size_t bytes) {
    pool_.reset();
    bytes_ = bytes;
    buffer_ = std::make_unique<char[]>(bytes);
    pool_.emplace(buffer_.get(), bytes, kOverflowChunk);
  }

  size_t bytes_ = 0;
  std::unique_ptr<char[]> buffer_;
  std::optional<rapidjson::MemoryPoolAllocator<>> pool_;
};

struct ArenaPool {
  std::vector<std::unique_ptr<EventArena>> free;
};

void ArenaReturn::operator()(EventArena* arena) const {
  std::unique_ptr<EventArena> owned(arena);
  auto decoder = pool.lock();
  if (!decoder || decoder->free.size() >= kKeptArenas) {
    return;
  }
  owned->recycle();
  decoder->free.push_back(std::move(owned));
}

namespace {
ArenaHandle takeArena(const std::shared_ptr<ArenaPool>& pool) {
  std::unique_ptr<EventArena> arena;
  if (pool->free.empty()) {
    arena = std::make_unique<EventArena>(kFirstArenaBytes);
  } else {
    arena = std::move(pool->free.back());
    pool->free.pop_back();
  }
  return ArenaHandle(arena.release(), ArenaReturn{pool});
}
}  // namespace

}  // namespace watch_detail

// --- WatchEvent -------------------------------------------------------------------------------

WatchEvent::WatchEvent(watch_detail::ArenaHandle a)
    : arena(std::move(a)), doc(&arena->pool(), 0, &watch_detail::gStackAllocator) {}

const rapidjson::Value& WatchEvent::object() const {
  static const rapidjson::Value kNull;
  auto it = doc.FindMember("object");
  return it == doc.MemberEnd() ? kNull : it->value;
}

Error WatchEvent::toError() const {
  auto status = meta::decodeStatus(object());
  if (!status) {
    return Error::decode("watch ERROR event without a Status object");
  }
  const int code = status->code;
  return Error::api(code, std::move(*status));
}

// --- WatchDecoder -----------------------------------------------------------------------------

namespace {

// The read buffer keeps its size between events up to this; beyond, it is let go when empty.
constexpr size_t kMaxKeptBufferBytes = 1024 * 1024;

bool isBlank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      return false;
    }
  }
  return true;
}

}  // namespace

WatchDecoder::WatchDecoder(size_t maxEventBytes)
    : maxEventBytes_(maxEventBytes), arenas_(std::make_shared<watch_detail::ArenaPool>()) {}

char* WatchDecoder::prepare(size_t size) {
  if (begin_ > 0 && buffer_.size() - end_ < size) {
    // Move what is left to the front rather than grow.
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < size) {
    buffer_.resize(std::max(end_ + size, buffer_.size() * 2));
  }
  return buffer_.data() + end_;
}

void WatchDecoder::commit(size_t size) {
  end_ += size;
}

Result<std::optional<WatchEvent>> WatchDecoder::next() {
  for (;;) {
    if (begin_ == end_) {
      begin_ = end_ = scanned_ = 0;  // empty: the next read starts at the front
      if (buffer_.size() > kMaxKeptBufferBytes) {
        std::vector<char>().swap(buffer_);  // a huge event passed: do not keep its room
      }
      return std::optional<WatchEvent>();
    }
    const char* start = buffer_.data() + begin_;
    const auto* nl =
        static_cast<const char*>(std::memchr(start + scanned_, '\n', end_ - begin_ - scanned_));
    if (nl == nullptr) {
      scanned_ = end_ - begin_;
      if (scanned_ > maxEventBytes_) {
        return eventTooLarge();
      }
      return std::optional<WatchEvent>();
    }
    const std::string_view line(start, static_cast<size_t>(nl - start));
    if (line.size() > maxEventBytes_) {
      // The same limit as for a line still waiting for its newline, so that whether an event
      // is refused does not depend on how the network cut the stream into reads.
      return eventTooLarge();
    }
    begin_ += line.size() + 1;
    scanned_ = 0;
    if (isBlank(line)) {
      continue;
    }
    auto event = decodeLine(line);
    if (!event) {
      return event.error();
    }
    return std::optional<WatchEvent>(std::move(*event));
  }
}

Error WatchDecoder::eventTooLarge() const {
  return Error::decode("watch event larger than " + std::to_string(maxEventBytes_) + " bytes");
}

Result<Ok> WatchDecoder::feed(std::string_view bytes, std::vector<WatchEvent>& out) {
  if (!bytes.empty()) {
    std::memcpy(prepare(bytes.size()), bytes.data(), bytes.size());
    commit(bytes.size());
  }
  for (;;) {
    auto event = next();
    if (!event) {
      return event.error();
    }
    if (!*event) {
      return Ok{};
    }
    out.push_back(std::move(**event));
  }
}

Result<WatchEvent> WatchDecoder::decodeLine(std::string_view line) {
  WatchEvent event(watch_detail::takeArena(arenas_));
  event.doc.Parse<rapidjson::kParseIterativeFlag>(line.data(), line.size());
  if (event.doc.HasParseError()) {
    return Error::decode("watch event is not valid JSON (at byte " +
                         std::to_string(event.doc.GetErrorOffset()) + " of " +
                         std::to_string(line.size()) + ")");
  }
  if (!event.doc.IsObject()) {
    return Error::decode("watch event is not a JSON object");
  }
  auto type = event.doc.FindMember("type");
  auto object = event.doc.FindMember("object");
  if (type == event.doc.MemberEnd() || !type->value.IsString()) {
    return Error::decode("watch event without a type");
  }
  if (object == event.doc.MemberEnd() || !object->value.IsObject()) {
    return Error::decode("watch event without an object");
  }
  const char* t = type->value.GetString();
  if (std::strcmp(t, "ADDED") == 0) {
    event.type = WatchEventType::Added;
  } else if (std::strcmp(t, "MODIFIED") == 0) {
    event.type = WatchEventType::Modified;
  } else if (std::strcmp(t, "DELETED") == 0) {
    event.type = WatchEventType::Deleted;
  } else if (std::strcmp(t, "BOOKMARK") == 0) {
    event.type = WatchEventType::Bookmark;
  } else if (std::strcmp(t, "ERROR") == 0) {
    event.type = WatchEventType::Error;
  } else {
    return Error::decode(std::string("unknown watch event type \"") + t + "\"");
  }
  return event;
}

Result<Ok> WatchDecoder::finish() const {
  if (!isBlank(std::string_view(buffer_.data() + begin_, end_ - begin_))) {
    return Error::decode("watch stream ended inside an event (" + std::to_string(end_ - begin_) +
                         " bytes)");
  }
  return Ok{};
}

}  // namespace egress::kube
