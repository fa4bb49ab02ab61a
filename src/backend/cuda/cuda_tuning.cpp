#include "backend/cuda/cuda_tuning.h"

#include <cstdlib>
#include <utility>

#include "backend/tuning.h"

namespace tessera::cuda {

namespace {

constexpr std::pair<const char*, LinearPath> kLinearNames[] = {{"auto", LinearPath::automatic},
                                                               {"gemv", LinearPath::gemv},
                                                               {"cublaslt", LinearPath::cublaslt},
                                                               {"tiled", LinearPath::tiled}};
constexpr std::pair<const char*, GemvKernel> kGemvNames[] = {{"auto", GemvKernel::automatic},
                                                             {"rows", GemvKernel::rows},
                                                             {"cores", GemvKernel::cores},
                                                             {"stream", GemvKernel::stream},
                                                             {"mma", GemvKernel::mma}};

template <class E, size_t N>
const char* name_of(const std::pair<const char*, E> (&names)[N], E e) {
  for (const auto& [n, v] : names)
    if (v == e) return n;
  return "?";
}

}  // namespace

CudaTuning parse_cuda_tuning(std::string_view spec) {
  CudaTuning t;
  const TuningKey keys[] = {
      {"graphs", "on, off", [&](std::string_view v) { return tuning_bool(v, t.graphs); }},
      {"fusions", "on, off", [&](std::string_view v) { return tuning_bool(v, t.fusions); }},
      {"linear", "auto, gemv, cublaslt, tiled",
       [&](std::string_view v) { return tuning_enum(v, kLinearNames, t.linear); }},
      {"gemv", "auto, rows, cores, stream, mma",
       [&](std::string_view v) { return tuning_enum(v, kGemvNames, t.gemv); }},
      {"pdl", "on, off", [&](std::string_view v) { return tuning_bool(v, t.pdl); }},
  };
  apply_tuning("TESSERA_CUDA_TUNING", spec, keys);
  return t;
}

const CudaTuning& cuda_env_tuning() {
  static const CudaTuning t = [] {
    const char* e = std::getenv("TESSERA_CUDA_TUNING");
    return parse_cuda_tuning(e ? e : "");
  }();
  return t;
}

std::string to_string(const CudaTuning& t) {
  auto on = [](bool b) { return b ? "on" : "off"; };
  return std::string("graphs=") + on(t.graphs) + ",fusions=" + on(t.fusions) +
         ",linear=" + name_of(kLinearNames, t.linear) + ",gemv=" + name_of(kGemvNames, t.gemv) +
         ",pdl=" + on(t.pdl);
}

}  // namespace tessera::cuda
