#include "pkg/base/heap_scavenger.h"

#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

namespace egress::base {
namespace {

using std::chrono::seconds;

struct Fixture {
  net::io_context ioc;
  FakeClock clock{ioc.get_executor()};
  int released = 0;
  HeapScavenger scavenger{clock, seconds(30), [this] { ++released; }};
  bool finished = false;

  void start() {
    net::co_spawn(ioc, scavenger.run(), [this](const std::exception_ptr& e) {
      if (e) {
        std::rethrow_exception(e);
      }
      finished = true;
    });
    ioc.poll();
  }
  void advance(seconds d) {
    clock.advance(d);
    ioc.poll();
  }
};

TEST(HeapScavenger, ReleasesOncePerPeriod) {
  Fixture f;
  f.start();
  f.advance(seconds(29));
  EXPECT_EQ(f.released, 0);
  f.advance(seconds(1));
  EXPECT_EQ(f.released, 1);
  f.advance(seconds(30));
  f.advance(seconds(30));
  EXPECT_EQ(f.released, 3);
  EXPECT_EQ(f.scavenger.rounds(), 3u);
  EXPECT_FALSE(f.finished);
}

TEST(HeapScavenger, StopEndsRunAtOnceAndReleasesNoMore) {
  Fixture f;
  f.start();
  f.advance(seconds(30));
  f.scavenger.stop();
  f.ioc.poll();
  EXPECT_TRUE(f.finished);
  f.advance(seconds(120));
  EXPECT_EQ(f.released, 1);
}

TEST(HeapScavenger, TheRealReleaseRuns) {
  net::io_context ioc;
  FakeClock clock(ioc.get_executor());
  HeapScavenger scavenger(clock, seconds(1));
  net::co_spawn(ioc, scavenger.run(), rethrowUnhandled);
  ioc.poll();
  clock.advance(seconds(1));
  ioc.poll();
  EXPECT_EQ(scavenger.rounds(), 1u);
  scavenger.stop();
  ioc.poll();
}

}  // namespace
}  // namespace egress::base
