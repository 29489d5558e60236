// A model shrunk for a CPU run: the same architecture with fewer layers and narrower widths, so
// the runtime can execute a Qwen3-8B-shaped plan on a laptop and the planner predicts for the
// shape actually executed (DESIGN, Runtime). One factor scales layers, widths, heads and vocab.
#pragma once
#include "planner/model/model_spec.hpp"

namespace infer_plan {

// Widths (hidden, FFN, expert FFN) are rounded to whole 256-value blocks (QK_K, so every type
// quantizes every row); head_dim stays (attention kernels and KV blocks depend on it); KV heads
// scale and the query heads keep their group size; layers, experts and vocab scale with a floor
// of 1 (experts: of experts_active). scale == 1 returns the spec unchanged; the name gains
// "@scale" otherwise. InputError (naming `what`) for a scale outside [kMinModelScale, 1].
ModelSpec scale_model_spec(const ModelSpec& spec, double scale, std::string_view what);

}  // namespace infer_plan
