// The CUDA backend's sampler, host side: per-row parameters and penalty lists staged to the GPU,
// the sampling kernels (sampling.cu), and only the ids and requested logprobs copied back.
#include "backend/cuda/cuda_backend_impl.h"

namespace tessera::cuda {

void CudaBackend::sample(Tensor logits, const SampleBatch& batch, SampleOutput& out) {
  sample_async(logits, batch);
  sample_wait(out);
}

// Issues the sampler and the copy of its ids (and logprobs when asked) into pinned memory, then
// records sample_done_; sample_wait() waits for that event only, so a forward issued in between
// runs on the GPU while the host waits.
void CudaBackend::sample_async(Tensor logits, const SampleBatch& batch, const int32_t* greedy_ids) {
  if (sampled_.pending) fail_arg("sample_async: the previous sample was not waited for");
  const int R = static_cast<int>(batch.rows.size());
  const int V = static_cast<int>(logits.cols);
  if (R > logits.rows)
    fail_arg("sample: " + std::to_string(R) + " parameter rows for " + std::to_string(logits.rows) +
             " logits rows");
  if (logits.dtype != DType::f32) fail_arg("sample: logits must be f32");
  int top_n = 0;
  bool any_lp = false;
  std::vector<SampleRowDev> rows(R);
  int work_rows = 0;
  const auto check_range = [&](int begin, int count, size_t size, const char* what) {
    if (count < 0 || begin < 0 || static_cast<size_t>(begin) + count > size)
      fail_arg(std::string("sample: a row's ") + what + " range is outside the batch's list");
  };
  for (int r = 0; r < R; ++r) {
    const SampleParams& p = batch.rows[r];
    check_range(p.rep_begin, p.rep_count, batch.penalty_ids.size(), "repetition penalty");
    check_range(p.freq_begin, p.freq_count,
                std::min(batch.penalty_ids.size(), batch.penalty_counts.size()),
                "frequency penalty");
    check_range(p.suppress_begin, p.suppress_count, batch.suppress_ids.size(), "suppression");
    SampleRowDev& d = rows[r];
    d.temperature = p.temperature;
    d.top_k = p.top_k;
    d.top_p = p.top_p;
    d.min_p = p.min_p;
    d.seed = p.seed;
    d.step = p.step;
    d.repetition_penalty = p.repetition_penalty;
    d.presence_penalty = p.presence_penalty;
    d.frequency_penalty = p.frequency_penalty;
    d.rep_begin = p.rep_begin;
    d.rep_count = p.rep_count;
    d.freq_begin = p.freq_begin;
    d.freq_count = p.freq_count;
    d.suppress_begin = p.suppress_begin;
    d.suppress_count = p.suppress_count;
    d.want_logprob = p.logprobs || p.top_logprobs > 0;
    d.top_n = std::max(0, p.top_logprobs);
    const bool needs_work =
        p.temperature > 0.f || p.rep_count > 0 || p.freq_count > 0 || p.suppress_count > 0;
    d.work_row = needs_work ? work_rows++ : -1;
    top_n = std::max(top_n, d.top_n);
    any_lp |= d.want_logprob != 0;
  }
  for (int32_t id : batch.penalty_ids)
    if (id < 0 || id >= V)
      fail_arg("sample: penalty id " + std::to_string(id) + " is outside the vocabulary");
  for (int32_t id : batch.suppress_ids)
    if (id < 0 || id >= V)
      fail_arg("sample: suppressed id " + std::to_string(id) + " is outside the vocabulary");

  bool all_plain_greedy = true;
  for (const SampleRowDev& d : rows)
    all_plain_greedy &= d.work_row < 0 && d.temperature <= 0.f && !d.want_logprob && d.top_n == 0;
  if (all_plain_greedy) {  // the common decode case: ids only (the forward's, when it picked)
    const int32_t* ids = greedy_ids;
    if (!ids) {
      auto* ws =
          static_cast<int32_t*>(grow(greedy_ids_dev_, static_cast<size_t>(R) * 4, "greedy ids"));
      argmax_rows(logits.rows_from(0, R), ws);
      ids = ws;
    }
    if (sample_host_.size() < static_cast<size_t>(R) * 4)
      sample_host_ =
          PinnedBuffer(std::max<size_t>(4096, 2 * static_cast<size_t>(R) * 4), "sampling staging");
    download_sampled(sample_host_.as<char>(), ids, static_cast<size_t>(R) * 4, R);
    return;
  }
  // Inputs: rows, penalty ids, counts, suppressed ids; outputs: ids, lp, top ids, top lp.
  const size_t n_pid = batch.penalty_ids.size(), n_pc = batch.penalty_counts.size(),
               n_sup = batch.suppress_ids.size();
  auto al = [](size_t b) { return (b + 255) / 256 * 256; };
  const size_t b_rows = al(R * sizeof(SampleRowDev)), b_pid = al(n_pid * 4), b_pc = al(n_pc * 4),
               b_sup = al(n_sup * 4);
  const size_t in_bytes = b_rows + b_pid + b_pc + b_sup;
  const size_t b_ids = al(R * 4), b_lp = al(R * 4), b_tid = al(static_cast<size_t>(R) * top_n * 4);
  const size_t out_bytes = b_ids + b_lp + 2 * b_tid;
  if (sample_host_.size() < in_bytes + out_bytes)
    sample_host_ = PinnedBuffer(2 * (in_bytes + out_bytes), "sampling staging");
  char* h = sample_host_.as<char>();
  std::memcpy(h, rows.data(), R * sizeof(SampleRowDev));
  std::memcpy(h + b_rows, batch.penalty_ids.data(), n_pid * 4);
  std::memcpy(h + b_rows + b_pid, batch.penalty_counts.data(), n_pc * 4);
  std::memcpy(h + b_rows + b_pid + b_pc, batch.suppress_ids.data(), n_sup * 4);
  char* d = static_cast<char*>(sample_dev_.get(in_bytes + out_bytes, "sampling buffers"));
  float* work = nullptr;
  if (work_rows > 0)
    work = static_cast<float*>(
        sample_work_.get(static_cast<size_t>(work_rows) * V * sizeof(float), "sampling work rows"));
  TS_CUDA(cudaMemcpyAsync(d, h, in_bytes, cudaMemcpyHostToDevice, up_stream_));
  TS_CUDA(cudaEventRecord(sample_inputs_, up_stream_));
  TS_CUDA(cudaStreamWaitEvent(stream_, sample_inputs_));
  char* dout = d + in_bytes;
  sample_rows(logits.ptr<const float>(), logits.stride, R, V,
              reinterpret_cast<const SampleRowDev*>(d),
              reinterpret_cast<const int32_t*>(d + b_rows),
              reinterpret_cast<const int32_t*>(d + b_rows + b_pid),
              reinterpret_cast<const int32_t*>(d + b_rows + b_pid + b_pc), work,
              reinterpret_cast<int32_t*>(dout), reinterpret_cast<float*>(dout + b_ids),
              reinterpret_cast<int32_t*>(dout + b_ids + b_lp),
              reinterpret_cast<float*>(dout + b_ids + b_lp + b_tid), top_n, stream_);
  // Only what was asked for crosses back.
  char* hout = h + in_bytes;
  const size_t back = any_lp ? out_bytes : b_ids;
  download_sampled(hout, dout, back, R);
  sampled_.top_n = top_n;
  sampled_.any_lp = any_lp;
  sampled_.b_ids = b_ids;
  sampled_.b_lp = b_lp;
  sampled_.b_tid = b_tid;
  sampled_.row_top_n.resize(R);
  for (int r = 0; r < R; ++r) sampled_.row_top_n[r] = rows[r].want_logprob ? rows[r].top_n : -1;
}

// The results' copy to the host on down_stream_, so that the compute stream goes on to the next
// forward without waiting for it; the `rows` ids lead both `dev` and `host`. The sample becomes
// sampled_, pending until sample_wait().
void CudaBackend::download_sampled(char* host, const void* dev, size_t bytes, int rows) {
  TS_CUDA(cudaEventRecord(sample_ready_, stream_));
  TS_CUDA(cudaStreamWaitEvent(down_stream_, sample_ready_));
  TS_CUDA(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, down_stream_));
  TS_CUDA(cudaEventRecord(sample_done_, down_stream_));
  sampled_ = LastSample{};
  sampled_.pending = true;
  sampled_.rows = rows;
  sampled_.host = host;
  sampled_.dev_ids = static_cast<const int32_t*>(dev);
}

void CudaBackend::sample_wait(SampleOutput& out) {
  if (!sampled_.pending) fail_arg("sample_wait: no sample is outstanding");
  sampled_.pending = false;
  TS_CUDA(cudaEventSynchronize(sample_done_));
  const int R = sampled_.rows, top_n = sampled_.top_n;
  const char* hout = sampled_.host;
  out.top_n = top_n;
  out.ids.assign(reinterpret_cast<const int32_t*>(hout),
                 reinterpret_cast<const int32_t*>(hout) + R);
  out.logprobs.clear();
  out.top_ids.assign(static_cast<size_t>(R) * top_n, -1);
  out.top_logprobs.assign(static_cast<size_t>(R) * top_n, -std::numeric_limits<float>::infinity());
  if (!sampled_.any_lp) return;
  out.logprobs.assign(R, 0.f);
  const float* lp = reinterpret_cast<const float*>(hout + sampled_.b_ids);
  const int32_t* tid = reinterpret_cast<const int32_t*>(hout + sampled_.b_ids + sampled_.b_lp);
  const float* tlp =
      reinterpret_cast<const float*>(hout + sampled_.b_ids + sampled_.b_lp + sampled_.b_tid);
  for (int r = 0; r < R; ++r) {
    if (sampled_.row_top_n[r] < 0) continue;  // no logprob asked
    out.logprobs[r] = lp[r];
    for (int k = 0; k < sampled_.row_top_n[r]; ++k) {
      out.top_ids[static_cast<size_t>(r) * top_n + k] = tid[static_cast<size_t>(r) * top_n + k];
      out.top_logprobs[static_cast<size_t>(r) * top_n + k] =
          tlp[static_cast<size_t>(r) * top_n + k];
    }
  }
}

}  // namespace tessera::cuda
