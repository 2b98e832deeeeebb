#include "pkg/cache/delta_fifo.h"

namespace egress::cache {

const char* toString(DeltaType t) {
  switch (t) {
    case DeltaType::Added:
      return "Added";
    case DeltaType::Updated:
      return "Updated";
    case DeltaType::Deleted:
      return "Deleted";
    case DeltaType::Replaced:
      return "Replaced";
    case DeltaType::Sync:
      return "Sync";
  }
  return "?";
}

}  // namespace egress::cache
