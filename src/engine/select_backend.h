// Device selection: the one place that turns a device name into a compute backend. Engine::load
// (EngineOptions::device) and the developer API (tessera logits --device) both choose here. It is
// in the engine layer because it names both backends: neither backend library links the other.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace tessera {

// device: "auto" or "" (CUDA when a usable GPU is present, else the CPU), "cpu" or "cuda".
// Throws Error(invalid_argument) for another name, and for "cuda" without a usable GPU (or in a
// build without CUDA).
std::unique_ptr<ComputeBackend> select_backend(const std::string& device);

}  // namespace tessera
