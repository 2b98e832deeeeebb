// File: watch_fuzz.cc
//
// libFuzzer target for pkg/kube's watch-event stream decoder (WatchDecoder, `make fuzz`,
// hack/fuzz.sh). The first 8 input bytes pick how the stream is cut into reads, the rest is the
// response body. Checked, on any input:
//   - the body decoded in one read (the reference) and the body cut at the chosen points, with
//     short reads (prepare(n), commit(k <= n)) and next() asked between reads as WatchStream
//     does, give the same events (type and the whole document, re-serialized) and the same
//     first error, and finish() agrees at the end of the stream;
//   - a decoder with a small maxEventBytes does the same, and rejects an event line longer than
//     its limit however the line arrived;
//   - every event's object decodes as ObjectMeta without crashing; an ERROR event gives an
//     Error with a message (toError(), what WatchStream returns for it);
//   - events stay valid after their decoder is gone (their arenas outlive it).
// A violation prints what went wrong on stderr and aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "pkg/apis/meta/object_meta.h"
#include "pkg/kube/errors.h"
#include "pkg/kube/watch_decoder.h"

namespace {

namespace kube = egress::kube;

// Small enough that the fuzzer reaches it with short inputs.
constexpr size_t kSmallMaxEventBytes = 64;

[[noreturn]] void fail(std::string_view what, std::string_view body, std::string_view detail) {
  std::fprintf(stderr, "watch_fuzz: %.*s\n  body: %.*s\n  detail: %.*s\n",
               static_cast<int>(what.size()), what.data(), static_cast<int>(body.size()),
               body.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// What a stream decodes to: the events (type and re-serialized document) up to the first
// error, that error, and finish()'s verdict if the stream got to its end.
struct Outcome {
  std::vector<std::string> events;
  std::optional<std::string> error;
  std::optional<std::string> finishError;

  bool operator==(const Outcome&) const = default;

  std::string describe() const {
    std::string s;
    for (const auto& e : events) {
      s += "event " + e + "\n";
    }
    s += "error " + error.value_or("-") + "\nfinish " + finishError.value_or("-");
    return s;
  }
};

std::string serialize(const kube::WatchEvent& event) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  event.doc.Accept(writer);
  return std::string(kube::toString(event.type)) + " " + buffer.GetString();
}

// The checks every decoded event must pass, whatever the framing.
void checkEvent(const kube::WatchEvent& event, std::string_view body) {
  if (!event.object().IsObject()) {
    fail("a decoded event's object() is not an object", body, serialize(event));
  }
  (void)egress::meta::decodeObjectMeta(event.object());
  if (event.type == kube::WatchEventType::Error) {
    const kube::Error err = event.toError();
    if (err.message().empty()) {
      fail("an ERROR event's Error has no message", body, serialize(event));
    }
  }
}

// Cuts a body into reads: each read's size comes from the schedule, cycled.
class Schedule {
 public:
  explicit Schedule(std::string_view bytes) : bytes_(bytes) {}

  // 1..64 bytes, sometimes (one in four) a large read.
  size_t nextRead() {
    if (bytes_.empty()) {
      return 1;
    }
    const auto b = static_cast<unsigned char>(bytes_[i_++ % bytes_.size()]);
    return (b & 3) == 0 ? 4096 : 1 + (b >> 2);
  }
  // How much of a prepared room a read fills: all of it, or a short read.
  size_t nextFill(size_t room) {
    if (bytes_.empty()) {
      return room;
    }
    const auto b = static_cast<unsigned char>(bytes_[i_++ % bytes_.size()]);
    return (b & 1) == 0 ? room : 1 + b % room;
  }

 private:
  std::string_view bytes_;
  size_t i_ = 0;
};

// Pulls every event the decoder holds into `out`; false once it has failed.
bool drain(kube::WatchDecoder& decoder, std::vector<kube::WatchEvent>& kept, Outcome& out,
           std::string_view body) {
  for (;;) {
    auto event = decoder.next();
    if (!event) {
      if (event.error().message().empty()) {
        fail("a decode error without a message", body, "");
      }
      out.error = event.error().message();
      return false;
    }
    if (!*event) {
      return true;
    }
    checkEvent(**event, body);
    out.events.push_back(serialize(**event));
    kept.push_back(std::move(**event));
  }
}

void finishInto(const kube::WatchDecoder& decoder, Outcome& out) {
  if (auto done = decoder.finish(); !done) {
    out.finishError = done.error().message();
  }
}

Outcome decodeWhole(std::string_view body, size_t maxEventBytes) {
  Outcome out;
  std::vector<kube::WatchEvent> kept;
  kube::WatchDecoder decoder(maxEventBytes);
  if (!body.empty()) {
    std::memcpy(decoder.prepare(body.size()), body.data(), body.size());
    decoder.commit(body.size());
  }
  if (drain(decoder, kept, out, body)) {
    finishInto(decoder, out);
  }
  return out;
}

// As WatchStream reads: next() until it has nothing, then one (possibly short) read. The
// events are kept past the decoder's end and serialized again, to check their arenas.
Outcome decodeCut(std::string_view body, Schedule schedule, size_t maxEventBytes) {
  Outcome out;
  std::vector<kube::WatchEvent> kept;
  {
    kube::WatchDecoder decoder(maxEventBytes);
    size_t at = 0;
    bool ok = drain(decoder, kept, out, body);
    while (ok && at < body.size()) {
      const size_t room = schedule.nextRead();
      const size_t n = std::min(schedule.nextFill(room), body.size() - at);
      std::memcpy(decoder.prepare(room), body.data() + at, n);
      decoder.commit(n);
      at += n;
      ok = drain(decoder, kept, out, body);
    }
    if (ok) {
      finishInto(decoder, out);
    }
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    if (serialize(kept[i]) != out.events[i]) {
      fail("an event changed after its decoder was destroyed", body, out.events[i]);
    }
  }
  return out;
}

// The longest newline-free run before the first error of a small-limit decode: none may be
// over the limit if that decode accepted the stream up to there.
void checkLimit(std::string_view body, const Outcome& small) {
  if (small.error) {
    return;
  }
  size_t run = 0;
  for (char c : body) {
    run = c == '\n' ? 0 : run + 1;
    if (run > kSmallMaxEventBytes) {
      fail("an event line longer than maxEventBytes was accepted", body, small.describe());
    }
  }
}

}  // namespace

// libFuzzer's entry point, named by libFuzzer.
// NOLINTNEXTLINE(readability-identifier-naming)
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string_view cuts = input.substr(0, std::min<size_t>(8, input.size()));
  const std::string_view body = input.substr(cuts.size());

  const Outcome whole = decodeWhole(body, size_t{256} << 20);
  const Outcome cut = decodeCut(body, Schedule(cuts), size_t{256} << 20);
  if (!(whole == cut)) {
    fail("cutting the stream into reads changed what it decodes to", body,
         "whole:\n" + whole.describe() + "\ncut:\n" + cut.describe());
  }
  const Outcome smallWhole = decodeWhole(body, kSmallMaxEventBytes);
  const Outcome smallCut = decodeCut(body, Schedule(cuts), kSmallMaxEventBytes);
  if (!(smallWhole == smallCut)) {
    fail("with a small maxEventBytes, cutting the stream changed what it decodes to", body,
         "whole:\n" + smallWhole.describe() + "\ncut:\n" + smallCut.describe());
  }
  checkLimit(body, smallWhole);
  return 0;
}
