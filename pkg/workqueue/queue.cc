#include "pkg/workqueue/queue.h"

namespace egress::workqueue {

// The key type every controller uses, compiled once here instead of in every user.
template class detail::QueueState<std::string, std::hash<std::string>>;
template class Queue<std::string>;

}  // namespace egress::workqueue
