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

void cut_pad_runs(const int64_t* map, int64_t a, int64_t b, std::vector<PadRun>* runs) {
  for (int64_t i = a; i < b;) {
    const int64_t src = map[i];
    int64_t step = 0;
    if (src >= 0 && i + 1 < b && map[i + 1] >= 0) step = map[i + 1] - src;
    if (step < -1 || step > 1) step = 0;
    int64_t len = 1;
    while (i + len < b && (src < 0 ? map[i + len] < 0 : map[i + len] == src + len * step)) ++len;
    runs->push_back(PadRun{i, len, src, step});
    i += len;
  }
}

void plan_pad_rows(const PadCall& c, PadRowPlan* p) {
  const int rank = c.y.rank, last = rank - 1;
  const int64_t out = c.y.sizes[last], n = c.x.sizes[last], lead = c.start[last];
  int64_t total = 0;
  for (int d = 0; d < rank; ++d) total += c.y.sizes[d];
  p->maps.resize(size_t(total));
  for (int d = 0, at = 0; d < rank; at += int(c.y.sizes[d]), ++d) {
    p->map_of[d] = p->maps.data() + at;
    for (int64_t o = 0; o < c.y.sizes[d]; ++o)
      p->maps[size_t(at + o)] = pad_source(c.mode, c.x.sizes[d], o - c.start[d]);
  }
  // with padding wider than the input, most rows repeat one written before
  const int second = last - 1;
  if (second >= 0) {
    std::vector<int64_t> seen(size_t(c.x.sizes[second]) + 1, -1);  // by source + 1
    for (int64_t o = 0; o < c.y.sizes[second]; ++o) {
      int64_t& at = seen[size_t(p->map_of[second][o] + 1)];
      if (at < 0) at = o;
      p->first_use.push_back(at);
    }
  }
  p->mid_lo = lead < out ? lead : out;
  p->mid_hi = lead + n < out ? lead + n : out;
  cut_pad_runs(p->map_of[last], 0, p->mid_lo, &p->runs);
  cut_pad_runs(p->map_of[last], p->mid_hi > p->mid_lo ? p->mid_hi : p->mid_lo, out, &p->runs);
}

void padding(const PadCall& c) {
  switch (element_size(c.y.dtype)) {
    case 1: return run<uint8_t>(c);
    case 2: return run<uint16_t>(c);
    case 4: return run<uint32_t>(c);
    default: return run<uint64_t>(c);
  }
}

}  // namespace dmlops
