// model.safetensors.index.json (io/model_dir.cpp): the weight_map's shard names, which must stay
// inside the model directory, and the shards it lists. The directory holds the Llama 3 fixture's
// config.json and two small shards whose names the seeds use.
#include <vector>

#include "fuzz_common.h"
#include "io/model_dir.h"
#include "io/safetensors.h"
#include "tessera/error.h"

namespace {

std::string make_dir() {
  using namespace tessera;
  const std::string dir = fuzz::scratch_subdir("index");
  std::filesystem::copy_file(fuzz::source_file("tests/fixtures/models/llama3/config.json"),
                             dir + "/config.json",
                             std::filesystem::copy_options::overwrite_existing);
  const std::vector<float> a(8, 1.0f), b(4, 2.0f);
  write_safetensors(dir + "/model-00001-of-00002.safetensors",
                    {{"model.embed_tokens.weight", DType::f32, {2, 4}, a.data()},
                     {"model.norm.weight", DType::f32, {4}, b.data()}});
  write_safetensors(dir + "/model-00002-of-00002.safetensors",
                    {{"lm_head.weight", DType::f32, {2, 4}, a.data()}});
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = make_dir();
  tessera::fuzz::write_file(dir + "/model.safetensors.index.json", data, size);
  try {
    tessera::ModelDir d(dir);
    for (const auto& [name, t] : d.tensors()) tessera::fuzz::touch(t.data, t.nbytes);
    (void)d.total_bytes();
  } catch (const tessera::Error&) {
  }
  return 0;
}
