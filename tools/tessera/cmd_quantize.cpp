// tessera quantize --model DIR --out DIR [--bits 4|8] [--group-size 64] [--mixed 4_6]: an MLX
// affine-quantized copy of a dense model directory, as mlx-lm's convert writes it
// (models/mlx_quantize.h).
#include <cstdio>

#include "cli.h"

namespace tessera::cli {

void add_quantize_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("quantize", "write an MLX 4/8-bit copy of a model directory");
  auto o = std::make_shared<QuantizeOptions>();
  cmd->add_option("--model", o->model_dir, "Hugging Face model directory (bf16, f16 or f32)")
      ->required();
  cmd->add_option("--out", o->out_dir, "output directory")->required();
  cmd->add_option("--bits", o->bits, "bits per weight: 2, 3, 4, 5, 6 or 8 (default 4)");
  cmd->add_option("--group-size", o->group_size, "weights per scale and bias: 32, 64 or 128");
  cmd->add_option("--mixed", o->mixed,
                  "mlx-lm's mixed recipe: 2_6 | 3_4 | 3_6 | 4_6 (v_proj, down_proj of some "
                  "layers and lm_head at the high width)");
  cmd->callback([o] {
    run_command([&] {
      const QuantizeReport r = quantize_model_dir(*o);
      std::fprintf(stderr, "wrote %s: %d tensors quantized, %d copied, %s -> %s\n",
                   o->out_dir.c_str(), r.quantized, r.copied, dev::format_bytes(r.bytes_in).c_str(),
                   dev::format_bytes(r.bytes_out).c_str());
      return 0;
    });
  });
}

}  // namespace tessera::cli
