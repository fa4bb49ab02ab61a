// tessera info --model DIR [--json]: architecture, layers, sizes, dtypes, parameters, bytes.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "cli_engine.h"

namespace tessera::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "describe a model directory");
  struct Args {
    std::string model, dtype = "auto";
    int quantize = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model", a->model, "Hugging Face model directory")->required();
  cmd->add_option("--dtype", a->dtype, "weight dtype in memory: auto | f32 | bf16");
  add_quantize_option(cmd, a->quantize);
  cmd->add_flag("--json", a->json, "print one JSON object");
  cmd->callback([a] {
    run_command([&] {
      const dev::ModelSummary summary = dev::describe_model(a->model, a->dtype, a->quantize);
      const ModelInfo& in = summary.info;
      int sliding = 0;
      for (const auto& t : in.layer_types) sliding += t == "sliding_attention";
      const size_t kv_per_token = summary.kv_bytes_per_token;
      nlohmann::json j = {
          {"architecture", in.architecture},
          {"model_type", in.model_type},
          {"layers", in.num_layers},
          {"layer_types", in.layer_types},
          {"sliding_layers", sliding},
          {"full_layers", in.num_layers - sliding},
          {"sliding_window", in.sliding_window},
          {"bidirectional", in.bidirectional},
          {"hidden_size", in.hidden_size},
          {"intermediate_size", in.intermediate_size},
          {"num_attention_heads", in.num_heads},
          {"num_key_value_heads", in.num_kv_heads},
          {"head_dim", in.head_dim},
          {"vocab_size", in.vocab_size},
          {"max_position_embeddings", in.max_position_embeddings},
          {"tied_embeddings", in.tied_embeddings},
          {"checkpoint_dtype", dtype_name(in.checkpoint_dtype)},
          {"weight_dtype", dtype_name(in.weight_dtype)},
          {"compute_dtype", dtype_name(in.compute_dtype)},
          {"parameters", in.parameter_count},
          {"weight_bytes", in.weight_bytes},
          {"kv_bytes_per_token", kv_per_token},
          {"eos_token_ids", in.eos_token_ids},
      };
      nlohmann::json formats = nlohmann::json::array();
      bool quantized = false, per_class = false;
      for (const WeightFormatInfo& f : in.weight_formats) {
        formats.push_back({{"tensor", f.tensor},
                           {"bits", f.bits},
                           {"group_size", f.group_size},
                           {"count", f.count},
                           {"file_bytes", f.file_bytes},
                           {"stored_as", f.stored_as}});
        quantized = quantized || f.bits != 0;
        per_class = per_class || f.bits != 0 || !f.stored_as.empty();
      }
      j["weight_formats"] = formats;
      j["quantized"] = quantized;
      if (a->json) {
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("architecture      %s (%s)\n", in.architecture.c_str(), in.model_type.c_str());
        std::printf("layers            %d (%d sliding, window %d; %d full)%s\n", in.num_layers,
                    sliding, in.sliding_window, in.num_layers - sliding,
                    in.bidirectional ? ", bidirectional attention" : "");
        std::printf("hidden            %d, intermediate %d\n", in.hidden_size,
                    in.intermediate_size);
        std::printf("attention heads   %d q, %d kv, head_dim %d\n", in.num_heads, in.num_kv_heads,
                    in.head_dim);
        std::printf("vocabulary        %d%s\n", in.vocab_size,
                    in.tied_embeddings ? " (tied head)" : "");
        std::printf("context           %d positions\n", in.max_position_embeddings);
        std::printf("dtype             %s on disk, %s in memory, computed in %s%s\n",
                    dtype_name(in.checkpoint_dtype), dtype_name(in.weight_dtype),
                    dtype_name(in.compute_dtype),
                    in.compute_dtype == DType::bf16 ? " (f32 accumulation)" : "");
        std::printf("parameters        %lld\n", static_cast<long long>(in.parameter_count));
        std::printf("weights           %s\n", dev::format_bytes(in.weight_bytes).c_str());
        if (per_class) {
          // One line per matrix class and format, e.g. "down_proj  6-bit g64  x26  12.3 MiB".
          // GGUF block types are named, with the affine form tessera runs them in.
          std::printf("quantization      per tensor class (on disk):\n");
          for (const WeightFormatInfo& f : in.weight_formats) {
            std::string fmt = f.bits
                                  ? std::to_string(f.bits) + "-bit g" + std::to_string(f.group_size)
                                  : std::string(dtype_name(in.checkpoint_dtype));
            if (!f.stored_as.empty()) fmt = f.stored_as + (f.bits ? " (" + fmt + ")" : "");
            std::printf("  %-14s %-18s x%-4d %s\n", f.tensor.c_str(), fmt.c_str(), f.count,
                        dev::format_bytes(f.file_bytes).c_str());
          }
        }
        std::printf(
            "KV cache          %s per token (full-attention layers; sliding layers hold at most "
            "the window)\n",
            dev::format_bytes(kv_per_token).c_str());
      }
      return 0;
    });
  });
}

}  // namespace tessera::cli
