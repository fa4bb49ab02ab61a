// The loading progress bar Engine::load prints to a terminal (EngineOptions::progress).
#pragma once

#include <cstddef>
#include <functional>

namespace tessera {

// A WeightLoader progress callback that redraws one stderr line per whole percent; empty (no
// output) when stderr is not a terminal, so logs and pipes stay clean.
std::function<void(size_t done, size_t total)> load_progress_printer();

}  // namespace tessera
