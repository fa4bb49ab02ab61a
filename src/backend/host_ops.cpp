// The default implementations of the elementwise and mixture-of-experts ops (backend.h): each
// brings its operands to the host, computes in f32 and writes the result back, through the
// interface's copies only, so that every backend runs them. On the CPU backend (host memory)
// the copies are memcpys and these are its implementation: the oracle a device kernel is
// compared with. A device backend overrides them with kernels (the copies synchronise and do not
// belong in a captured forward).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/backend.h"
#include "core/check.h"

namespace tessera {
namespace {

// A strided [rows, cols] view's elements as f32 on the host, row-major and dense.
std::vector<float> to_host(ComputeBackend& be, const Tensor& t) {
  TS_ASSERT(t.dtype == DType::f32 || t.dtype == DType::bf16 || t.dtype == DType::f16);
  const size_t es = dtype_size(t.dtype);
  std::vector<char> raw(static_cast<size_t>(t.rows) * t.cols * es);
  for (int64_t r = 0; r < t.rows; ++r)
    be.copy_to_host(raw.data() + r * t.cols * es,
                    static_cast<const char*>(t.data) + r * t.row_bytes(), t.cols * es);
  std::vector<float> out(static_cast<size_t>(t.rows * t.cols));
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == DType::f32) {
      out[i] = reinterpret_cast<const float*>(raw.data())[i];
    } else {
      const uint16_t h = reinterpret_cast<const uint16_t*>(raw.data())[i];
      out[i] = t.dtype == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
  }
  return out;
}

// Writes dense row-major f32 values into the strided view t, rounded to its dtype.
void from_host(ComputeBackend& be, const std::vector<float>& v, const Tensor& t) {
  TS_ASSERT(v.size() == static_cast<size_t>(t.rows * t.cols));
  const size_t es = dtype_size(t.dtype);
  std::vector<char> raw(v.size() * es);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t.dtype == DType::f32) {
      reinterpret_cast<float*>(raw.data())[i] = v[i];
    } else if (t.dtype == DType::bf16) {
      reinterpret_cast<uint16_t*>(raw.data())[i] = f32_to_bf16(v[i]);
    } else {
      reinterpret_cast<uint16_t*>(raw.data())[i] = f32_to_f16(v[i]);
    }
  }
  for (int64_t r = 0; r < t.rows; ++r)
    be.copy_to_device(static_cast<char*>(t.data) + r * t.row_bytes(), raw.data() + r * t.cols * es,
                      t.cols * es);
}

// ref: torch.nn.functional.gelu(approximate="tanh") and silu, in f32.
float activate(Activation act, float g) {
  if (act == Activation::gelu_tanh) {
    const float k0 = 0.7978845608028654f;  // sqrt(2 / pi)
    return 0.5f * g * (1.f + std::tanh(k0 * (g + 0.044715f * g * g * g)));
  }
  return g / (1.f + std::exp(-g));
}

}  // namespace

void ComputeBackend::scale(Tensor x, float s) {
  std::vector<float> v = to_host(*this, x);
  for (float& e : v) e *= s;
  from_host(*this, v, x);
}

void ComputeBackend::act_mul(Tensor gate, Tensor up, Activation act, Tensor out) {
  TS_ASSERT(gate.rows == up.rows && gate.cols == up.cols && out.rows == gate.rows &&
            out.cols == gate.cols);
  std::vector<float> g = to_host(*this, gate);
  const std::vector<float> u = to_host(*this, up);
  for (size_t i = 0; i < g.size(); ++i) g[i] = activate(act, g[i]) * u[i];
  from_host(*this, g, out);
}

void ComputeBackend::moe_route(Tensor scores, int k, const Tensor* per_expert_scale, Tensor weights,
                               Tensor ids) {
  const int64_t T = scores.rows, E = scores.cols;
  TS_ASSERT(k > 0 && k <= E && weights.rows == T && weights.cols == k && ids.rows == T &&
            ids.cols == k && weights.dtype == DType::f32 && ids.dtype == DType::i32);
  const std::vector<float> s = to_host(*this, scores);
  std::vector<float> pes(static_cast<size_t>(E), 1.0f);
  if (per_expert_scale) pes = to_host(*this, *per_expert_scale);
  std::vector<float> w(static_cast<size_t>(T * k));
  std::vector<int32_t> id(static_cast<size_t>(T * k));
  std::vector<float> p(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    const float* row = s.data() + t * E;
    const float mx = *std::max_element(row, row + E);
    float sum = 0;
    for (int64_t e = 0; e < E; ++e) sum += p[e] = std::exp(row[e] - mx);
    for (int64_t e = 0; e < E; ++e) p[e] /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
    float top = 0;
    for (int j = 0; j < k; ++j) top += p[order[j]];
    for (int j = 0; j < k; ++j) {
      id[t * k + j] = order[j];
      w[t * k + j] = p[order[j]] / top * pes[order[j]];
    }
  }
  from_host(*this, w, weights);
  for (int64_t t = 0; t < T; ++t)
    copy_to_device(static_cast<char*>(ids.data) + t * ids.row_bytes(), id.data() + t * k,
                   k * sizeof(int32_t));
}

void ComputeBackend::moe_experts(Tensor x, std::span<const Weight* const> gate_up,
                                 std::span<const Weight* const> down, Activation act,
                                 Tensor weights, Tensor ids, Tensor out) {
  const int64_t T = x.rows, H = x.cols, k = ids.cols, E = static_cast<int64_t>(gate_up.size());
  TS_ASSERT(E > 0 && down.size() == gate_up.size() && out.rows == T && out.cols == H &&
            ids.rows == T && weights.rows == T && weights.cols == k);
  std::vector<int32_t> id(static_cast<size_t>(T * k));
  for (int64_t t = 0; t < T; ++t)
    copy_to_host(id.data() + t * k, static_cast<const char*>(ids.data) + t * ids.row_bytes(),
                 k * sizeof(int32_t));
  const std::vector<float> w = to_host(*this, weights);
  const int64_t I = down[0]->cols;
  const DType act_dt = act_dtype();
  // Device temporaries for the largest group (every token).
  DeviceArray rows = alloc_array(1, T, DType::i32, "moe rows");
  DeviceArray xg = alloc_array(T, H, act_dt, "moe x");
  DeviceArray gu = alloc_array(T, 2 * I, act_dt, "moe gate_up");
  DeviceArray g = alloc_array(T, I, act_dt, "moe gated");
  DeviceArray y = alloc_array(T, H, act_dt, "moe y");
  std::vector<float> acc(static_cast<size_t>(T * H), 0.0f);
  std::vector<int32_t> tok;
  std::vector<float> tok_w;
  for (int64_t e = 0; e < E; ++e) {
    // ref: torch.where(expert_mask[e]): by top-k slot, then by token.
    tok.clear();
    tok_w.clear();
    for (int64_t j = 0; j < k; ++j)
      for (int64_t t = 0; t < T; ++t)
        if (id[t * k + j] == e)
          tok.push_back(static_cast<int32_t>(t)), tok_w.push_back(w[t * k + j]);
    if (tok.empty()) continue;
    const int64_t n = static_cast<int64_t>(tok.size());
    TS_ASSERT(gate_up[e]->rows == 2 * I && gate_up[e]->cols == H && down[e]->rows == H &&
              down[e]->cols == I);
    copy_to_device(rows.view.data, tok.data(), tok.size() * sizeof(int32_t));
    gather_rows(x, rows.view.ptr<int32_t>(), static_cast<int>(n), xg.view.rows_from(0, n));
    linear_gated(xg.view.rows_from(0, n), *gate_up[e], nullptr, act, gu.view.rows_from(0, n),
                 g.view.rows_from(0, n));
    linear(g.view.rows_from(0, n), *down[e], nullptr, y.view.rows_from(0, n));
    const std::vector<float> ye = to_host(*this, y.view.rows_from(0, n));
    for (int64_t r = 0; r < n; ++r) {
      float* o = acc.data() + static_cast<int64_t>(tok[r]) * H;
      for (int64_t i = 0; i < H; ++i) o[i] += ye[r * H + i] * tok_w[r];
    }
  }
  from_host(*this, acc, out);
}

}  // namespace tessera
