#include "roi_pool/roi_pool.h"

#include "common/dispatch.h"
#include "common/keys.h"
#include "common/threads.h"

namespace dmlops {

namespace {

template <class T>
void roi(const RoiPoolCall& c) {
  using K = MaxKey<T>;
  const int64_t rois = c.y.sizes[0], channels = c.y.sizes[1];
  const int64_t ph_n = c.y.sizes[2], pw_n = c.y.sizes[3];
  const int64_t h = c.x.sizes[2], w = c.x.sizes[3];
  parallel_for(rois * channels, double(c.y.count()) * double(h * w) / double(ph_n * pw_n) + 1,
               c.threads, [&](int64_t lo, int64_t hi) {
    for (int64_t item = lo; item < hi; ++item) {
      int64_t r = item / channels, ch = item % channels;
      const int64_t* g = c.regions + 5 * r;
      int64_t rh = g[4] - g[2] + 1, rw = g[3] - g[1] + 1;
      rh = rh < 1 ? 1 : rh;
      rw = rw < 1 ? 1 : rw;
      int64_t base = g[0] * c.x.strides[0] + ch * c.x.strides[1];
      for (int64_t ph = 0; ph < ph_n; ++ph) {
        int64_t h0, h1;
        roi_bin(ph, ph_n, rh, g[2], h, &h0, &h1);
        for (int64_t pw = 0; pw < pw_n; ++pw) {
          int64_t w0, w1;
          roi_bin(pw, pw_n, rw, g[1], w, &w0, &w1);
          T best = bit_cast<T>(typename K::Key(0));
          if (h0 < h1 && w0 < w1) {
            best = load(c.x.template at<T>(base + h0 * c.x.strides[2] + w0 * c.x.strides[3]));
            typename K::Key kb = K::key(best);
            for (int64_t yy = h0; yy < h1; ++yy)
              for (int64_t xx = w0; xx < w1; ++xx) {
                T v = load(c.x.template at<T>(base + yy * c.x.strides[2] + xx * c.x.strides[3]));
                typename K::Key kv = K::key(v);
                if (kv > kb) {
                  kb = kv;
                  best = v;
                }
              }
          }
          store(c.y.template at<T>(r * c.y.strides[0] + ch * c.y.strides[1] +
                                   ph * c.y.strides[2] + pw * c.y.strides[3]),
                best);
        }
      }
    }
  });
}

}  // namespace

void roi_pool(const RoiPoolCall& c) {
  with_float_type(c.x.dtype, [&](auto tag) { roi<decltype(tag)>(c); });
}

}  // namespace dmlops
