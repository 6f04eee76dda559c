#pragma once
#include <string>
#include <vector>

namespace dmlops {

// Names of the extensions the levels need that this CPU (and its operating system) offers.
std::vector<std::string> cpu_features();

// The vector instructions this module was compiled to use (its level's, in words: "SSE2",
// "AVX2", "AVX-512" on x86-64, "NEON" on aarch64): what `dmlops info` names.
const char* compiled_instructions();

}  // namespace dmlops
