// A safetensors file (io/safetensors.h): the 8-byte header length, the JSON header, the offsets
// and shapes checked against the data. Every tensor the reader accepts is read at its first,
// middle and last byte, so that an accepted view outside the mapping faults.
#include "fuzz_common.h"
#include "io/safetensors.h"
#include "tessera/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = tessera::fuzz::scratch_dir() + "/model.safetensors";
  tessera::fuzz::write_file(path, data, size);
  try {
    tessera::SafetensorsFile f(path);
    for (const auto& [name, t] : f.tensors()) {
      tessera::fuzz::touch(t.data, t.nbytes);
      (void)t.numel();
      (void)t.shape_str();
    }
  } catch (const tessera::Error&) {
  }
  return 0;
}
