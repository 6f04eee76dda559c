#include "padding/padding.h"

#include "padding/padding_plain.h"
#include "padding/padding_rows.h"

namespace dmlops {

namespace {
template <class T>
void run(const PadCall& c) {
  if (c.plain)
    padding_plain<T>(c);
  else
    padding_rows<T>(c);
}
}  // namespace

void padding(const PadCall& c) {
  switch (element_size(c.y.dtype)) {
    case 1: return run<uint8_t>(c);
    case 2: return run<uint16_t>(c);
    case 4: return run<uint32_t>(c);
    default: return run<uint64_t>(c);
  }
}

}  // namespace dmlops
