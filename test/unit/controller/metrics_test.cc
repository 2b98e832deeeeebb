#include "pkg/controller/metrics.h"

#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace egress::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string exposition(const prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

// The per-policy series alerts select on: egress_policy_ready follows the Ready condition and
// goes with the policy, beside the replica and selected-pod gauges.
TEST(ControllerMetrics, PolicyReadyFollowsTheConditionAndGoesWithThePolicy) {
  prometheus::Registry registry;
  Metrics metrics(&registry);
  metrics.setPolicy("team-a", "web", 2, 1, 3, false);
  metrics.setPolicy("team-b", "db", 1, 1, 1, true);
  std::string text = exposition(registry);
  EXPECT_THAT(text, HasSubstr("egress_policy_ready{namespace=\"team-a\",policy=\"web\"} 0"));
  EXPECT_THAT(text, HasSubstr("egress_policy_ready{namespace=\"team-b\",policy=\"db\"} 1"));
  EXPECT_THAT(text, HasSubstr("egress_selected_pods{namespace=\"team-a\",policy=\"web\"} 3"));

  metrics.setPolicy("team-a", "web", 2, 2, 3, true);
  metrics.removePolicy("team-b", "db");
  text = exposition(registry);
  EXPECT_THAT(text, HasSubstr("egress_policy_ready{namespace=\"team-a\",policy=\"web\"} 1"));
  EXPECT_THAT(text, Not(HasSubstr("policy=\"db\"")));
}

// A process that never reconciled (a standby) exports the policy summary at 0 and no
// per-policy series, so "max over replicas" is the leader's view.
TEST(ControllerMetrics, AFreshProcessHasTheSummaryAtZeroAndNoPolicySeries) {
  prometheus::Registry registry;
  Metrics metrics(&registry);
  const std::string text = exposition(registry);
  for (const char* state : {"ready", "not_ready", "invalid"}) {
    EXPECT_THAT(text, HasSubstr("egress_policies{state=\"" + std::string(state) + "\"} 0"));
  }
  EXPECT_THAT(text, Not(HasSubstr("egress_policy_ready{")));
}

TEST(ControllerMetrics, ANullRegistryIgnoresEveryCall) {
  Metrics metrics(nullptr);
  metrics.setPolicy("ns", "p", 1, 1, 1, true);
  metrics.removePolicy("ns", "p");
  metrics.allocationFailed("pool", "PoolExhausted");
  metrics.setPolicies(1, 0, 0);
  SUCCEED();
}

}  // namespace
}  // namespace egress::controller
