#pragma once
#include <string>
#include <vector>

namespace dmlops {

// Names of the extensions the levels need that this CPU (and its operating system) offers.
std::vector<std::string> cpu_features();

}  // namespace dmlops
