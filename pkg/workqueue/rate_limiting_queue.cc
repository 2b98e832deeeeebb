#include "pkg/workqueue/rate_limiting_queue.h"

namespace egress::workqueue {

template class RateLimitingQueue<std::string>;

}  // namespace egress::workqueue
