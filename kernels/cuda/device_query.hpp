// What CUDA devices this process sees. Plain C++ header (no CUDA types) so it can be included
// anywhere; implemented in device_query.cu when the CUDA build is on.
#pragma once
#include <string>
#include <vector>

namespace infer_plan::kernels::cuda {

struct DeviceInfo {
  int index = 0;
  std::string name;
  size_t memory_bytes = 0;
  int sm_major = 0;
  int sm_minor = 0;
};

// Empty when there is no driver or no device (never throws for that: CI has no GPU).
std::vector<DeviceInfo> devices();
// Runs a trivial kernel on device 0 and returns a * x + y computed there (a build/launch check).
float saxpy_check(float a, float x, float y);

}  // namespace infer_plan::kernels::cuda
