// llama.cpp's flags of more than one letter after a single dash, which CLI11 cannot name: main
// reads each as its long name, and the bash completion offers both.
#pragma once
#include <string_view>
#include <utility>

namespace infer_plan::apps {

inline constexpr std::pair<std::string_view, std::string_view> kLlamaCppShortFlags[] = {
    {"-ngl", "--n-gpu-layers"}, {"-ctk", "--cache-type-k"}, {"-ctv", "--cache-type-v"},
    {"-np", "--parallel"},      {"-fa", "--flash-attn"},    {"-ub", "--ubatch-size"}, {"-ot", "--override-tensor"},
    {"-ts", "--tensor-split"},  {"-fit", "--fit"},          {"-fitt", "--fit-target"},  {"-fitc", "--fit-ctx"},
    {"-dev", "--device"},       {"-sm", "--split-mode"}};

}  // namespace infer_plan::apps
