// File: leader_metrics.h
//
// client-go's leader-election metrics as component-base registers them:
// leader_election_master_status{name} (1 while this candidate leads, else 0) and
// leader_election_slowpath_total{name} (renewals that had to re-read the lock). A null registry
// means no metrics; every method is then a no-op.
#pragma once

#include <string>

namespace prometheus {
class Counter;
class Gauge;
class Registry;
}  // namespace prometheus

namespace egress::leaderelection {

class LeaderMetrics {
 public:
  LeaderMetrics(prometheus::Registry* registry, const std::string& name);

  void leaderOn();
  void leaderOff();
  void slowpathExercised();

 private:
  prometheus::Gauge* masterStatus_ = nullptr;
  prometheus::Counter* slowpath_ = nullptr;
};

}  // namespace egress::leaderelection
