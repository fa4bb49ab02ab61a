// A GGUF file (io/gguf.cpp: header, metadata, tensor infos, data section) with every metadata
// value read through the typed accessors, every tensor's bytes touched, and then the model import
// (io/gguf_model.cpp: metadata to config.json, tensor names and layouts) and a load on the CPU
// backend, as `tessera generate -m file.gguf` does.
#include "fuzz_common.h"
#include "io/gguf.h"
#include "model_dir_harness.h"

namespace {

void read_values(const tessera::GgufFile& f) {
  using T = tessera::GgufValueType;
  for (const std::string& key : f.keys()) {
    const tessera::GgufValue& v = f.get(key);
    try {
      switch (v.type) {
        case T::string:
          (void)f.get_string(key);
          break;
        case T::boolean:
          (void)f.get_bool(key);
          break;
        case T::f32:
        case T::f64:
          (void)f.get_float(key);
          break;
        case T::array:
          (void)f.array_size(key);
          if (v.elem_type == T::string)
            (void)f.get_string_array(key);
          else if (v.elem_type == T::f32)
            (void)f.get_f32_array(key);
          else
            (void)f.get_int_array(key);
          break;
        default:
          (void)f.get_int(key);
          break;
      }
    } catch (const tessera::Error&) {
      // An integer out of int64's range, an array of another element type: refused by name.
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = tessera::fuzz::scratch_dir() + "/model.gguf";
  tessera::fuzz::write_file(path, data, size);
  try {
    tessera::GgufFile f(path);
    read_values(f);
    for (const tessera::GgufTensor& t : f.tensors()) tessera::fuzz::touch(t.data, t.nbytes);
  } catch (const tessera::Error&) {
    return 0;
  }
  try {
    tessera::ModelDir d(path);
    auto model = tessera::load_model(d, tessera::fuzz::cpu_backend(), tessera::LoadOptions{});
  } catch (const tessera::Error&) {
  }
  return 0;
}
