#include "planner/model/device_arch.hpp"

#include <array>

namespace infer_plan {
namespace {

constexpr std::array kArchs{
    DeviceArch{"pascal", "nvidia", "Tesla P40, P100, GTX 1080 Ti"},
    DeviceArch{"volta", "nvidia", "Tesla V100, Titan V"},
    DeviceArch{"turing", "nvidia", "T4, RTX 2080 Ti, Quadro RTX 8000"},
    DeviceArch{"ampere", "nvidia", "A100, A40, A10, RTX A6000, RTX 3090"},
    DeviceArch{"ada", "nvidia", "L40S, L4, RTX 6000 Ada, RTX 4090"},
    DeviceArch{"hopper", "nvidia", "H100, H200, GH200, H20"},
    DeviceArch{"blackwell", "nvidia", "B200, GB200, RTX 5090, RTX PRO 6000"},
    DeviceArch{"apple-m1", "apple", "M1, M1 Pro, M1 Max, M1 Ultra"},
    DeviceArch{"apple-m2", "apple", "M2, M2 Pro, M2 Max, M2 Ultra"},
    DeviceArch{"apple-m3", "apple", "M3, M3 Pro, M3 Max, M3 Ultra"},
    DeviceArch{"apple-m4", "apple", "M4, M4 Pro, M4 Max"},
    DeviceArch{"cdna2", "amd", "MI210, MI250X"},
    DeviceArch{"cdna3", "amd", "MI300X, MI325X"},
    DeviceArch{"cdna4", "amd", "MI350X, MI355X"},
    DeviceArch{"rdna3", "amd", "RX 7900 XTX, Radeon PRO W7900, Radeon 8060S (Ryzen AI Max+ 395, RDNA 3.5)"},
};

}  // namespace

std::span<const DeviceArch> device_archs() { return kArchs; }

const DeviceArch* find_device_arch(std::string_view name) {
  for (const DeviceArch& a : kArchs)
    if (a.name == name) return &a;
  return nullptr;
}

std::string device_arch_names() {
  std::string s;
  for (const DeviceArch& a : kArchs) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

}  // namespace infer_plan
