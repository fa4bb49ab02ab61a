// TESSERA_CUDA_TUNING's parser (no GPU needed): every key and value, the defaults, the printed
// form, and the errors (naming the variable, the key and the allowed values).
#include <gtest/gtest.h>

#include <string>

#ifdef TESSERA_HAVE_CUDA
#include "backend/cuda/cuda_tuning.h"
#include "tessera/error.h"

namespace tessera::cuda {
namespace {

std::string error_of(const char* spec) {
  try {
    parse_cuda_tuning(spec);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  return "";
}

TEST(CudaTuning, DefaultsAndEveryKey) {
  const CudaTuning d = parse_cuda_tuning("");
  EXPECT_TRUE(d.graphs && d.fusions && d.pdl);
  EXPECT_EQ(d.linear, LinearPath::automatic);
  EXPECT_EQ(d.gemv, GemvKernel::automatic);
  EXPECT_EQ(to_string(d), "graphs=on,fusions=on,linear=auto,gemv=auto,pdl=on");
  const CudaTuning t = parse_cuda_tuning("graphs=off, fusions=0,linear=cublaslt,gemv=mma,pdl=off");
  EXPECT_FALSE(t.graphs || t.fusions || t.pdl);
  EXPECT_EQ(t.linear, LinearPath::cublaslt);
  EXPECT_EQ(t.gemv, GemvKernel::mma);
  EXPECT_EQ(to_string(t), "graphs=off,fusions=off,linear=cublaslt,gemv=mma,pdl=off");
  EXPECT_EQ(to_string(parse_cuda_tuning(to_string(t))), to_string(t));
  const std::pair<const char*, GemvKernel> kinds[] = {
      {"rows", GemvKernel::rows}, {"cores", GemvKernel::cores}, {"stream", GemvKernel::stream}};
  for (const auto& [name, kind] : kinds)
    EXPECT_EQ(parse_cuda_tuning(std::string("gemv=") + name).gemv, kind) << name;
  EXPECT_EQ(parse_cuda_tuning("linear=gemv").linear, LinearPath::gemv);
  EXPECT_EQ(parse_cuda_tuning("linear=tiled,linear=auto").linear, LinearPath::automatic);
}

TEST(CudaTuning, UnknownKeysAndValuesNameTheVariableKeyAndValues) {
  std::string e = error_of("graphs=off,gemv=fast");
  EXPECT_NE(e.find("TESSERA_CUDA_TUNING"), std::string::npos) << e;
  EXPECT_NE(e.find("gemv=fast"), std::string::npos) << e;
  EXPECT_NE(e.find("auto, rows, cores, stream, mma"), std::string::npos) << e;
  e = error_of("fuse=0");
  EXPECT_NE(e.find("unknown key 'fuse'"), std::string::npos) << e;
  EXPECT_NE(e.find("graphs, fusions, linear, gemv, pdl"), std::string::npos) << e;
  EXPECT_NE(error_of("graphs=no").find("on, off"), std::string::npos);
  EXPECT_NE(error_of("pdl").find("pdl="), std::string::npos);  // no value
  EXPECT_NE(error_of("linear=cublas").find("auto, gemv, cublaslt, tiled"), std::string::npos);
}

}  // namespace
}  // namespace tessera::cuda
#endif
