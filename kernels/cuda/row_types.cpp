#include "kernels/cuda/row_types.hpp"

namespace infer_plan::kernels::cuda {

const CudaRowType* find_cuda_row_type(GgmlType type) {
  for (const CudaRowType& t : kCudaRowTypes)
    if (t.type == type) return &t;
  return nullptr;
}

std::string cuda_row_type_names(bool matrices_only) {
  std::string names;
  for (const CudaRowType& t : kCudaRowTypes) {
    if (matrices_only && !t.matrix) continue;
    if (!names.empty()) names += ", ";
    names += ggml_type_info(t.type).name;
  }
  return names;
}

}  // namespace infer_plan::kernels::cuda
