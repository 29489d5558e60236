// The device architectures a profile may state ("arch"): the level between an engine and one device
// at which the step model transfers (devices of one architecture share kernels, dequantization
// paths and their achieved fraction of the datasheet rates). One table, read by the profile parser,
// its error messages and `hw`.
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace infer_plan {

struct DeviceArch {
  std::string_view name;    // as a profile writes it: "ampere"
  std::string_view vendor;  // "nvidia", "apple", "amd"
  std::string_view examples;  // devices of it, for help and errors
};

std::span<const DeviceArch> device_archs();
// The entry named `name`, or nullptr.
const DeviceArch* find_device_arch(std::string_view name);
// "pascal, volta, ..." for messages.
std::string device_arch_names();

}  // namespace infer_plan
