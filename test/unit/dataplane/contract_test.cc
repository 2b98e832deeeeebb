// The agent reads exactly what the operator writes: the names both sides spell out.
#include <gtest/gtest.h>

#include "pkg/controller/names.h"
#include "pkg/dataplane/cluster_view.h"

namespace egress::dataplane {
namespace {

TEST(Contract, NamesMatchTheOperators) {
  EXPECT_EQ(kAgentLeasePrefix, controller::kAgentLeasePrefix);
}

}  // namespace
}  // namespace egress::dataplane
