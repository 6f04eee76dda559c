// Max pooling's comparison (SPEC 3.4) as integer keys: key(a) > key(b) exactly when a wins
// over an earlier b. Floats map to integers of their width that order like the values, with
// -0.0 equal to +0.0 (a tie: the lowest index wins) and every NaN equal to the largest key (the
// first NaN wins and sticks). Integers are their own keys. The winning bits are kept apart
// from the key, so values are copied exactly (-0.0, NaN payloads).
#pragma once
#include <cstdint>
#include <limits>

#include "half.h"

namespace dmlops {

// Raw: the plain type the fast paths move values as (FLOAT16: its bits, as uint16_t), whose
// key is key_raw.
template <class T> struct MaxKey {
  using Key = T;
  using Raw = T;
  static constexpr bool kKeyIsValue = true;
  static Key key(T v) { return v; }
  static Key key_raw(T v) { return v; }
};

template <class Bits, class K> struct FloatKey {
  using Key = K;
  static constexpr bool kKeyIsValue = false;
  static constexpr K kMag = std::numeric_limits<K>::max();  // all magnitude bits
  static Key key_of_bits(Bits raw, Bits inf) {
    K b = K(raw);
    K mag = K(b & kMag);
    K flipped = K(b ^ kMag);
    K k = b < 0 ? flipped : b;
    k = mag == 0 ? K(0) : k;
    return Bits(mag) > inf ? kMag : k;
  }
};

template <> struct MaxKey<float> : FloatKey<uint32_t, int32_t> {
  using Raw = float;
  static Key key(float v) { return key_of_bits(bit_cast<uint32_t>(v), 0x7F800000u); }
  static Key key_raw(float v) { return key(v); }
};
template <> struct MaxKey<double> : FloatKey<uint64_t, int64_t> {
  using Raw = double;
  static Key key(double v) {
    return key_of_bits(bit_cast<uint64_t>(v), 0x7FF0000000000000ull);
  }
  static Key key_raw(double v) { return key(v); }
};

template <> struct MaxKey<Half> : FloatKey<uint16_t, int16_t> {
  using Raw = uint16_t;
  static Key key(Half v) { return key_of_bits(v.bits, uint16_t(0x7C00u)); }
  static Key key_raw(uint16_t v) { return key_of_bits(v, uint16_t(0x7C00u)); }
};

// The value of a window with no real element: -inf, or the integer type's minimum.
template <class T> inline T empty_value() { return std::numeric_limits<T>::min(); }
template <> inline float empty_value<float>() { return -std::numeric_limits<float>::infinity(); }
template <> inline double empty_value<double>() { return -std::numeric_limits<double>::infinity(); }
template <> inline Half empty_value<Half>() { return Half{0xFC00u}; }

}  // namespace dmlops
