#include "models/weight_loader.h"

#include "core/check.h"
#include "core/thread_pool.h"
#include "models/mlx_quantize.h"
#include "quant/affine.h"
#include "quant/gguf_blocks.h"

namespace tessera {

namespace {

// "layers.3.mlp.down_proj.weight" -> "layers.3.mlp.down_proj"
std::string module_of(const std::string& weight_name) {
  const std::string suffix = ".weight";
  TS_ASSERT(weight_name.size() > suffix.size() &&
            weight_name.compare(weight_name.size() - suffix.size(), suffix.size(), suffix) == 0);
  return weight_name.substr(0, weight_name.size() - suffix.size());
}

// A GGUF block-quantized matrix t [rows, cols] in the affine form the packed kernels take
// (quant/gguf_blocks.h gguf_affine_row: the reference values exactly), stored as compactly as
// gguf_affine_storage allows: f16 scales and biases where they are the file's f16 values, no
// biases for the symmetric types (the HostQuantTensor then gets bias_per_scale).
QuantizedMatrix ggml_matrix_affine(const TensorInfo& t, QuantFormat f) {
  const auto type = static_cast<GgmlType>(t.ggml_type);
  const quant::GgufAffineStorage st = quant::gguf_affine_storage(type);
  const int64_t rows = t.shape[0], cols = t.shape[1], groups = cols / f.group_size;
  const int64_t words = quant::words_per_row(cols, f.bits),
                row_bytes = quant::gguf_row_bytes(type, cols);
  QuantizedMatrix o;
  o.dtype = st.f16_scales ? DType::f16 : DType::f32;
  o.packed.resize(static_cast<size_t>(rows * words));
  const size_t n = static_cast<size_t>(rows * groups);
  if (st.f16_scales) {
    o.s16.resize(n);
    if (!st.symmetric) o.b16.resize(n);
  } else {
    o.s32.resize(n);
    if (!st.symmetric) o.b32.resize(n);
  }
  ThreadPool::global().parallel_for(rows, [&](int64_t r0, int64_t r1, int) {
    std::vector<uint8_t> q(static_cast<size_t>(cols));
    std::vector<float> s(static_cast<size_t>(groups)), b(s.size());
    for (int64_t r = r0; r < r1; ++r) {
      quant::gguf_affine_row(type, static_cast<const uint8_t*>(t.data) + r * row_bytes, cols,
                             q.data(), s.data(), b.data());
      quant::pack_row(q.data(), cols, f.bits, o.packed.data() + r * words);
      for (int64_t g = 0; g < groups; ++g) {
        const size_t i = static_cast<size_t>(r * groups + g);
        if (st.f16_scales) {  // exact: the file's own f16 values
          o.s16[i] = f32_to_f16(s[g]);
          if (!st.symmetric) o.b16[i] = f32_to_f16(b[g]);
        } else {
          o.s32[i] = s[g];
          if (!st.symmetric) o.b32[i] = b[g];
        }
      }
    }
  });
  return o;
}

}  // namespace

WeightLoader::WeightLoader(ModelDir& dir, ComputeBackend& backend, DType weight_dtype,
                           std::function<void(size_t, size_t)> progress, QuantFormat quantize_to)
    : dir_(dir),
      backend_(backend),
      dtype_(weight_dtype),
      progress_(std::move(progress)),
      qc_(read_quant_config(dir)),
      quantize_to_(quantize_to),
      total_(dir.total_bytes()) {}

const TensorInfo& WeightLoader::take_checked(const std::string& name,
                                             const std::vector<int64_t>& shape) {
  const TensorInfo& t = dir_.take(name);
  if (t.shape != shape) {
    std::string want = "[";
    for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
    want += "]";
    fail_model(t.file + ": tensor '" + t.name + "' has shape " + t.shape_str() + " but " +
               dir_.config_path() + " implies " + want);
  }
  if (t.dtype_known && (t.dtype == DType::u32 || t.dtype == DType::i32))
    fail_model(t.file + ": tensor '" + t.name + "' has dtype " + t.dtype_name +
               " where a float tensor is expected");
  params_ += t.numel();
  done_ += t.nbytes;
  if (progress_) progress_(done_, total_);
  return t;
}

void WeightLoader::record(const std::string& module, QuantFormat f, size_t file_bytes,
                          const std::string& stored_as) {
  const std::string cls = module.substr(module.rfind('.') + 1);
  for (WeightFormatInfo& i : formats_)
    if (i.tensor == cls && i.bits == f.bits && i.group_size == f.group_size &&
        i.stored_as == stored_as) {
      ++i.count;
      i.file_bytes += file_bytes;
      return;
    }
  formats_.push_back({cls, f.bits, f.group_size, 1, file_bytes, stored_as});
}

std::unique_ptr<Weight> WeightLoader::matrix(const std::vector<std::string>& names,
                                             const std::vector<int64_t>& rows, int64_t cols) {
  // The compute interface takes host views, not io's TensorInfo (it knows no file format).
  const size_t n = names.size();
  std::vector<HostTensor> dense(n);
  std::vector<HostQuantTensor> packed(n);
  std::vector<QuantizedMatrix> copies(n);
  std::vector<bool> is_quant(n);
  std::vector<const TensorInfo*> read;  // released from memory once uploaded
  for (size_t i = 0; i < n; ++i) {
    const std::string module = module_of(names[i]);
    const QuantFormat f = module_format(dir_, qc_, module, rows[i], cols);
    if (f.quantized()) {
      const TensorInfo& w = dir_.take(names[i]);
      const TensorInfo& s = dir_.take(module + ".scales");
      const TensorInfo& b = dir_.take(module + ".biases");
      read.insert(read.end(), {&w, &s, &b});
      packed[i] = {static_cast<const uint32_t*>(w.data), s.data, b.data, s.dtype, rows[i], cols, f,
                   w.file + ": tensor '" + w.name + "'"};
      is_quant[i] = true;
      params_ += rows[i] * cols;
      done_ += w.nbytes + s.nbytes + b.nbytes;
      if (progress_) progress_(done_, total_);
      record(module, f, w.nbytes + s.nbytes + b.nbytes);
      continue;
    }
    const TensorInfo& t = take_checked(names[i], {rows[i], cols});
    read.push_back(&t);
    const std::string what = t.file + ": tensor '" + t.name + "'";
    if (t.ggml) {  // a GGUF block type: its own format, kept (not re-quantized)
      if (!quant::gguf_type_supported(t.ggml_type))
        fail(ErrorKind::unsupported, what + " is " + t.dtype_name +
                                         ", which tessera does not read (it reads F32, F16, BF16, "
                                         "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
      const auto g = quant::gguf_affine_format(static_cast<GgmlType>(t.ggml_type));
      const QuantFormat gf{g.bits, g.group_size};
      copies[i] = ggml_matrix_affine(t, gf);
      const quant::GgufAffineStorage st =
          quant::gguf_affine_storage(static_cast<GgmlType>(t.ggml_type));
      packed[i] = {copies[i].packed.data(),
                   copies[i].scales(),
                   st.symmetric ? nullptr : copies[i].biases(),
                   copies[i].dtype,
                   rows[i],
                   cols,
                   gf,
                   what,
                   st.bias_per_scale};
      is_quant[i] = true;
      record(module, gf, t.nbytes, t.dtype_name);
      continue;
    }
    if (quantize_to_.quantized() && cols % quantize_to_.group_size == 0) {
      copies[i] = quantize_matrix(t, quantize_to_);
      packed[i] = {copies[i].packed.data(),
                   copies[i].scales(),
                   copies[i].biases(),
                   copies[i].dtype,
                   rows[i],
                   cols,
                   quantize_to_,
                   what};
      is_quant[i] = true;
      record(module, quantize_to_, t.nbytes);
      continue;
    }
    dense[i] = {t.data, t.dtype, t.shape, what};
    record(module, {}, t.nbytes, dir_.gguf() ? t.dtype_name : "");
  }
  // One upload when the parts share a layout, else one per part (Weight::parts).
  bool same = true;
  for (size_t i = 1; i < n; ++i)
    same = same && is_quant[i] == is_quant[0] &&
           (!is_quant[0] || packed[i].format == packed[0].format);
  auto upload = [&](size_t b, size_t e) -> std::unique_ptr<Weight> {
    if (is_quant[b]) {
      std::vector<const HostQuantTensor*> parts;
      for (size_t i = b; i < e; ++i) parts.push_back(&packed[i]);
      return backend_.upload_quantized(parts, dtype_, names[b]);
    }
    std::vector<const HostTensor*> parts;
    for (size_t i = b; i < e; ++i) parts.push_back(&dense[i]);
    return backend_.upload_weight(parts, dtype_, names[b]);
  };
  std::unique_ptr<Weight> w;
  if (same) {
    w = upload(0, n);
  } else {
    std::vector<std::unique_ptr<Weight>> parts;
    for (size_t i = 0; i < n; ++i) parts.push_back(upload(i, i + 1));
    w = ComputeBackend::stack_parts(std::move(parts));
  }
  held_ += w->bytes;
  for (const TensorInfo* t : read) dir_.release(*t);
  return w;
}

namespace {
void check_plain(const TensorInfo& t) {
  if (!t.dtype_known)
    fail_model(t.file + ": tensor '" + t.name + "' is " + t.dtype_name +
               "; a norm or bias vector must be F32, F16 or BF16");
}
}  // namespace

DeviceArray WeightLoader::vector(const std::string& name, int64_t n, float add) {
  const TensorInfo& t = take_checked(name, {n});
  check_plain(t);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float x = t.dtype == DType::f32    ? static_cast<const float*>(t.data)[i]
              : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[i])
                                       : f16_to_f32(static_cast<const uint16_t*>(t.data)[i]);
    v[i] = add + x;
  }
  dir_.release(t);
  held_ += v.size() * sizeof(float);
  return backend_.upload_f32(v, "norm/bias vector");
}

DeviceArray WeightLoader::vectors(const std::vector<std::string>& names,
                                  const std::vector<int64_t>& n) {
  std::vector<float> all;
  for (size_t i = 0; i < names.size(); ++i) {
    const TensorInfo& t = take_checked(names[i], {n[i]});
    check_plain(t);
    for (int64_t j = 0; j < n[i]; ++j)
      all.push_back(t.dtype == DType::f32    ? static_cast<const float*>(t.data)[j]
                    : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[j])
                                             : f16_to_f32(static_cast<const uint16_t*>(t.data)[j]));
    dir_.release(t);
  }
  held_ += all.size() * sizeof(float);
  return backend_.upload_f32(all, "bias vector");
}

std::vector<std::unique_ptr<Weight>> WeightLoader::experts(const std::string& name, int64_t E,
                                                           int64_t rows, int64_t cols) {
  const TensorInfo& t = take_checked(name, {E, rows, cols});
  const std::string what = t.file + ": tensor '" + t.name + "'";
  if (!t.dtype_known || t.ggml)
    fail(ErrorKind::unsupported,
         what + " is " + t.dtype_name + "; expert stacks must be F32, F16 or BF16");
  std::vector<std::unique_ptr<Weight>> out;
  const size_t per = static_cast<size_t>(rows * cols) * dtype_size(t.dtype);
  for (int64_t e = 0; e < E; ++e) {
    HostTensor h{static_cast<const char*>(t.data) + e * per,
                 t.dtype,
                 {rows, cols},
                 what + " expert " + std::to_string(e)};
    const HostTensor* parts[] = {&h};
    out.push_back(backend_.upload_weight(parts, dtype_, name));
    held_ += out.back()->bytes;
  }
  record(name, {}, t.nbytes);
  dir_.release(t);
  return out;
}

float WeightLoader::scalar(const std::string& name) {
  const TensorInfo& t = take_checked(name, {1});
  check_plain(t);
  const float v = t.dtype == DType::f32    ? static_cast<const float*>(t.data)[0]
                  : t.dtype == DType::bf16 ? bf16_to_f32(static_cast<const uint16_t*>(t.data)[0])
                                           : f16_to_f32(static_cast<const uint16_t*>(t.data)[0]);
  dir_.release(t);
  return v;
}

LayerWeights load_layer(WeightLoader& w, ComputeBackend& backend, const DecoderConfig& c, int i) {
  const std::string p = "layers." + std::to_string(i) + ".";
  const int64_t H = c.hidden, hd = c.head_dim, I = c.intermediate, q = int64_t{c.heads} * hd,
                kv = int64_t{c.kv_heads} * hd;
  const float add = c.norm_add;
  LayerWeights L;
  L.input_layernorm = w.vector(p + "input_layernorm.weight", H, add);
  L.post_attention_layernorm = w.vector(p + "post_attention_layernorm.weight", H, add);
  if (c.sandwich_norms) {
    L.pre_feedforward_layernorm = w.vector(p + "pre_feedforward_layernorm.weight", H, add);
    L.post_feedforward_layernorm = w.vector(p + "post_feedforward_layernorm.weight", H, add);
  }
  if (c.qk_norm) {
    L.q_norm = w.vector(p + "self_attn.q_norm.weight", hd, add);
    L.k_norm = w.vector(p + "self_attn.k_norm.weight", hd, add);
  }
  L.qkv = w.matrix(
      {p + "self_attn.q_proj.weight", p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight"},
      {q, kv, kv}, H);
  if (c.qkv_bias)
    L.qkv_bias = w.vectors(
        {p + "self_attn.q_proj.bias", p + "self_attn.k_proj.bias", p + "self_attn.v_proj.bias"},
        {q, kv, kv});
  L.o = w.matrix({p + "self_attn.o_proj.weight"}, {H}, q);
  if (c.o_bias) L.o_bias = w.vector(p + "self_attn.o_proj.bias", H);
  L.gate_up = w.matrix({p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"}, {I, I}, H);
  L.down = w.matrix({p + "mlp.down_proj.weight"}, {H}, I);
  L.window = c.window[i];
  L.inv_freq = backend.upload_f32(rope_inv_freq(c.rope[i], c.head_dim), "rope inv_freq");
  return L;
}

DecoderWeights load_decoder_weights(WeightLoader& w, ModelDir& dir, ComputeBackend& backend,
                                    const DecoderConfig& c, bool tied) {
  TS_ASSERT(c.window.size() == static_cast<size_t>(c.layers) &&
            c.rope.size() == static_cast<size_t>(c.layers));
  DecoderWeights d;
  d.embed_tokens = w.matrix({"embed_tokens.weight"}, {c.vocab}, c.hidden);
  for (int i = 0; i < c.layers; ++i) d.layers.push_back(load_layer(w, backend, c, i));
  d.norm = w.vector("norm.weight", c.hidden, c.norm_add);
  if (!tied) {
    d.lm_head = w.matrix({"lm_head.weight"}, {c.vocab}, c.hidden);
  } else {
    // A redundant copy of the tied embedding: transformers ignores it, and so does tessera.
    for (const char* t : {"lm_head.weight", "lm_head.scales", "lm_head.biases"})
      if (dir.has(t)) dir.take(t);
  }
  dir.check_all_used();
  return d;
}

}  // namespace tessera
