#include "pkg/workqueue/delaying_queue.h"

namespace egress::workqueue {

template class detail::DelayState<std::string, std::hash<std::string>>;
template class DelayingQueue<std::string>;

}  // namespace egress::workqueue
