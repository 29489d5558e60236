// The RoPE a model asks for, as kernels/cpu/rope and kernels/cuda/rope take it: llama.cpp's layout
// per architecture (NeoX for Qwen2/Qwen3 and their MoE, normal for Llama and DeepSeek), partial
// RoPE, MLA's RoPE part, llama3's factors, linear and YaRN scaling from the spec's RopeScaling.
#pragma once
#include <vector>

#include "kernels/cpu/rope.hpp"
#include "planner/model/model_spec.hpp"

namespace infer_plan::runtime {

// freq_factors: the model's rope_freqs (host or device floats, as the kernel runs), or nullptr.
// InputError for a scaling type the kernels do not apply (naming spec.rope_scaling.key).
kernels::RopeParams rope_params(const ModelSpec& spec, const float* freq_factors);

// Llama 3.1's rope_freqs from config.json's rope_scaling (factor, low/high_freq_factor, original
// context), as convert_hf_to_gguf derives them: 1 for wavelengths under original / high_freq_factor,
// factor for those over original / low_freq_factor, a smooth blend between. rotated() / 2 floats.
std::vector<float> llama3_rope_factors(const ModelSpec& spec);

// MLA's score scale, as llama.cpp's deepseek2 forms it: 1 / sqrt(head_dim) (the nope + RoPE heads
// the latent stands for) times g^2, g = 0.1 mscale_all_dim ln(factor) + 1 under DeepSeek's YaRN
// (whose RoPE then has magnitude 1), or the RoPE's own YaRN magnitude without mscale_all_dim.
float mla_score_scale(const ModelSpec& spec);

}  // namespace infer_plan::runtime
