// Numerically safe softmax in place: subtract the max, exponentiate, divide by the sum.
#pragma once
#include <cstdint>

namespace infer_plan::kernels {

void softmax(float* x, uint64_t n);
void softmax_reference(float* x, uint64_t n);  // double accumulation

}  // namespace infer_plan::kernels
