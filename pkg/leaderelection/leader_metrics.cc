#include "pkg/leaderelection/leader_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace egress::leaderelection {

LeaderMetrics::LeaderMetrics(prometheus::Registry* registry, const std::string& name) {
  if (registry == nullptr) {
    return;
  }
  // Help texts as component-base's clientgo/leaderelection adapter has them. Registering the
  // same family again (a second elector) returns the existing one.
  masterStatus_ = &prometheus::BuildGauge()
                       .Name("leader_election_master_status")
                       .Help(
                           "Gauge of if the reporting system is master of the relevant lease, 0 "
                           "indicates backup, 1 indicates master. 'name' is the string used to "
                           "identify the lease. Please make sure to group by name.")
                       .Register(*registry)
                       .Add({{"name", name}});
  slowpath_ = &prometheus::BuildCounter()
                   .Name("leader_election_slowpath_total")
                   .Help(
                       "Total number of slow path exercised in renewing leader leases. 'name' "
                       "is the string used to identify the lease. Please make sure to group by "
                       "name.")
                   .Register(*registry)
                   .Add({{"name", name}});
}

void LeaderMetrics::leaderOn() {
  if (masterStatus_ != nullptr) {
    masterStatus_->Set(1);
  }
}

void LeaderMetrics::leaderOff() {
  if (masterStatus_ != nullptr) {
    masterStatus_->Set(0);
  }
}

void LeaderMetrics::slowpathExercised() {
  if (slowpath_ != nullptr) {
    slowpath_->Increment();
  }
}

}  // namespace egress::leaderelection
