#include "bindings/cpu_features.h"

namespace dmlops {

std::vector<std::string> cpu_features() {
  std::vector<std::string> out;
#if defined(__x86_64__) || defined(_M_X64)
  __builtin_cpu_init();
  // GCC's checks include the operating system's support for the wider registers (XCR0)
#define DMLOPS_FEATURE(name) \
  if (__builtin_cpu_supports(name)) out.emplace_back(name);
  DMLOPS_FEATURE("avx2")
  DMLOPS_FEATURE("fma")
  DMLOPS_FEATURE("f16c")
  DMLOPS_FEATURE("bmi")
  DMLOPS_FEATURE("bmi2")
  DMLOPS_FEATURE("lzcnt")
  DMLOPS_FEATURE("popcnt")
  DMLOPS_FEATURE("avx512f")
  DMLOPS_FEATURE("avx512bw")
  DMLOPS_FEATURE("avx512vl")
  DMLOPS_FEATURE("avx512dq")
  DMLOPS_FEATURE("avx512cd")
#undef DMLOPS_FEATURE
#endif
  return out;
}

const char* compiled_instructions() {
#if defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__)
  return "AVX2";
#elif defined(__ARM_NEON)
  return "NEON";
#elif defined(__SSE2__)
  return "SSE2";
#else
  return "scalar";
#endif
}

}  // namespace dmlops
