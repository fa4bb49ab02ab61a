// tessera::Engine: the public API over one model, its tokenizer and chat template, and the
// continuous-batching scheduler that every call goes through.
#include "tessera/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>

#include "backend/backend.h"
#include "chat/chat_template.h"
#include "chat/chat_tools.h"
#include "core/check.h"
#include "engine/batch_builder.h"
#include "engine/classify_output.h"
#include "engine/constraints.h"
#include "engine/embed_output.h"
#include "engine/engine_policy.h"
#include "engine/kv_pool.h"
#include "engine/load_progress.h"
#include "engine/output_processor.h"
#include "engine/request_prep.h"
#include "engine/request_streams.h"
#include "engine/scheduler.h"
#include "engine/select_backend.h"
#include "io/gguf.h"
#include "io/model_dir.h"
#include "models/model.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

namespace {

namespace fs = std::filesystem;

class EngineImpl final : public Engine {
 public:
  explicit EngineImpl(const EngineOptions& o) : opts_(o) {
    if (o.model_dir.empty()) fail_arg("no model directory given");
    backend_ = select_backend(o.device);
    const bool gpu = backend_->device() == Device::cuda;
    if (o.memory_limit) memory_tracker(backend_->device()).set_limit(o.memory_limit);
    load_files(o);
    constraints_ = std::make_unique<ConstraintCache>(tokenizer_.get(), info().vocab_size);
    eos_ = find_eos_set();
    context_ = context_length_for(o.context_length, info().max_position_embeddings, gpu);
    SchedulerOptions so;
    const int whole = info().bidirectional ? context_ : 0;  // inputs run whole: one step each
    so.max_batch_tokens = max_batch_tokens_for(o.max_batch_tokens, gpu, whole);
    so.max_seqs = max_seqs_for(o.max_seqs, gpu);
    so.context_length = context_;
    so.prefix_cache = o.prefix_cache;
    make_pool(o, so, gpu);
    sched_ = std::make_unique<Scheduler>(*model_, *pool_, so);
    if (o.warmup && gpu) warm_up();
  }

  ~EngineImpl() override { sched_.reset(); }

  const ModelInfo& info() const override { return model_->info(); }
  std::string device_name() const override { return backend_->name(); }
  int context_length() const override { return context_; }
  bool has_tokenizer() const override { return tokenizer_ != nullptr; }
  bool has_chat_template() const override { return chat_template_ != nullptr; }
  std::vector<int32_t> eos_token_ids() const override { return eos_; }

  void validate(const SamplingOptions& s) const override { validate_sampling_options(s); }
  void validate(const GenerateOptions& g) const override {
    check_generate_options(g, context_, info().vocab_size);
    if (g.constraint.kind != OutputConstraint::Kind::none) constraints_->get(g.constraint);
  }

  PreparedRequest prepare(const Prompt& prompt, const GenerateOptions& g) const override {
    validate(g);
    return prepare_checked(prompt_ids(prompt, g.add_special_tokens), g, "prompt");
  }

  PreparedRequest prepare(const std::vector<ChatMessage>& messages,
                          const GenerateOptions& g) const override {
    validate(g);
    std::string text;
    try {
      text = render_chat(messages, /*add_generation_prompt=*/true, g.tools);
    } catch (const RequestError&) {
      throw;
    } catch (const Error& e) {
      throw RequestError("messages",
                         std::string("the chat template rejected the messages: ") + e.what());
    }
    if (!tokenizer_) throw RequestError("messages", "this model directory has no tokenizer.json");
    // The template writes the special tokens itself (BOS included), as transformers'
    // apply_chat_template(tokenize=True) encodes without adding any.
    std::vector<int32_t> ids = tokenizer_->encode(text, /*add_special_tokens=*/false);
    if (ids.empty()) throw RequestError("messages", "the messages render to an empty prompt");
    check_tokenized_ids(ids, info().vocab_size, "messages", *tokenizer_);
    GenerateOptions as_used = g;
    as_used.add_special_tokens = false;
    return prepare_checked(std::move(ids), as_used, "messages");
  }

  PreparedClassify prepare(const Prompt& prompt, const ClassifyOptions& o) const override {
    check_classify_options(o);
    return prepare_checked(prompt, o);
  }

  PreparedEmbed prepare(const Prompt& prompt, const EmbedOptions& o) const override {
    PreparedEmbed r{prompt_ids(with_st_prompt(prompt, o, st_), o.add_special_tokens),
                    resolve_embed_options(o, st_, model_->info().hidden_size)};
    check_classify_context(static_cast<int>(r.prompt.size()), context_);
    if (info().bidirectional)  // its tokens see each other: one step, never chunked
      check_whole_prompt(static_cast<int>(r.prompt.size()), sched_->options().max_batch_tokens);
    return r;
  }
  int embedding_size() const override { return embedding_size_of(st_, model_->info().hidden_size); }

  GenerateResult generate(const PreparedRequest& req, const TokenCallback& on_token,
                          const CancelToken& cancel) override {
    return run(make_spec(req, on_token, cancel));
  }

  GenerateResult generate(const Prompt& prompt, const GenerateOptions& opts,
                          const TokenCallback& on_token, const CancelToken& cancel) override {
    return prepare_and_run(prompt, opts, on_token, cancel);
  }

  GenerateResult chat(const std::vector<ChatMessage>& messages, const GenerateOptions& opts,
                      const TokenCallback& on_token, const CancelToken& cancel) override {
    return prepare_and_run(messages, opts, on_token, cancel);
  }

  // A prompt or a conversation prepared, then run; a request error is its result, not a throw.
  template <class Input>
  GenerateResult prepare_and_run(const Input& input, const GenerateOptions& opts,
                                 const TokenCallback& on_token, const CancelToken& cancel) {
    PreparedRequest req;
    try {
      req = prepare(input, opts);
    } catch (const Error& e) {
      return error_result(e.what());
    }
    return run(make_spec(std::move(req), on_token, cancel));
  }

  std::vector<GenerateResult> batch_generate(const std::vector<Prompt>& prompts,
                                             const GenerateOptions& opts, const CancelToken& cancel,
                                             BatchMetrics* metrics) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<GenerateResult> out(prompts.size());
    std::vector<std::shared_ptr<RequestShared>> shared(prompts.size());
    std::vector<RequestSpec> specs;
    std::string options_error;  // the options are checked once, for every prompt
    try {
      validate(opts);
    } catch (const Error& e) {
      options_error = e.what();
    }
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::string error = options_error;
      PreparedRequest req;
      if (error.empty()) {
        try {
          req = prepare_checked(prompt_ids(prompts[i], opts.add_special_tokens), opts, "prompt");
        } catch (const Error& e) {
          error = e.what();
        }
      }
      if (!error.empty()) {
        out[i] = error_result(error);
        continue;
      }
      specs.push_back(make_spec(std::move(req), {}, cancel));
      shared[i] = specs.back().shared;
    }
    sched_->submit(std::move(specs));
    for (size_t i = 0; i < prompts.size(); ++i)
      if (shared[i]) out[i] = wait(*shared[i]);
    if (metrics) {
      *metrics = BatchMetrics{};
      metrics->requests = static_cast<int>(out.size());
      for (const auto& r : out) {
        metrics->prompt_tokens += r.metrics.prompt_tokens;
        metrics->generated_tokens += r.metrics.generated_tokens;
      }
      finish_batch_metrics(*metrics, t0);
    }
    return out;
  }

  std::vector<ClassifyResult> classify(const std::vector<Prompt>& prompts,
                                       const ClassifyOptions& opts, BatchMetrics* metrics,
                                       const CancelToken& cancel) override {
    const auto t0 = std::chrono::steady_clock::now();
    check_classify_options(opts);  // throws: every prompt shares the options
    std::vector<ClassifyResult> out(prompts.size());
    std::vector<PreparedClassify> reqs;
    std::vector<size_t> at;  // reqs[j] is prompts[at[j]]
    for (size_t i = 0; i < prompts.size(); ++i) {
      try {
        reqs.push_back(prepare_checked(prompts[i], opts));
        at.push_back(i);
      } catch (const Error& e) {
        out[i].error = e.what();
      }
    }
    std::vector<ClassifyResult> ran = run_classify(std::move(reqs), cancel);
    for (size_t j = 0; j < ran.size(); ++j) out[at[j]] = std::move(ran[j]);
    if (metrics) prompt_metrics(out, t0, *metrics);
    return out;
  }

  std::vector<ClassifyResult> classify(const std::vector<PreparedClassify>& reqs,
                                       BatchMetrics* metrics, const CancelToken& cancel) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<ClassifyResult> out = run_classify(reqs, cancel);
    if (metrics) prompt_metrics(out, t0, *metrics);
    return out;
  }

  std::vector<EmbedResult> embed(const std::vector<Prompt>& prompts, const EmbedOptions& opts,
                                 BatchMetrics* metrics, const CancelToken& cancel) override {
    const auto t0 = std::chrono::steady_clock::now();
    resolve_embed_options(opts, st_, model_->info().hidden_size);  // throws: shared options
    with_st_prompt(Prompt(std::string()), opts, st_);              // and the prompt's name
    std::vector<EmbedResult> out(prompts.size());
    std::vector<PreparedEmbed> reqs;
    std::vector<size_t> at;  // reqs[j] is prompts[at[j]]
    for (size_t i = 0; i < prompts.size(); ++i) {
      try {
        reqs.push_back(prepare(prompts[i], opts));
        at.push_back(i);
      } catch (const Error& e) {
        out[i].error = e.what();
      }
    }
    std::vector<EmbedResult> ran = embed(reqs, nullptr, cancel);
    for (size_t j = 0; j < ran.size(); ++j) out[at[j]] = std::move(ran[j]);
    if (metrics) prompt_metrics(out, t0, *metrics);
    return out;
  }

  std::vector<EmbedResult> embed(const std::vector<PreparedEmbed>& reqs, BatchMetrics* metrics,
                                 const CancelToken& cancel) override {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<EmbedResult> out = run_embed(*sched_, reqs, cancel, &st_.dense);
    if (metrics) prompt_metrics(out, t0, *metrics);
    return out;
  }

  std::unique_ptr<RequestStream> submit(const PreparedRequest& req) override {
    RequestSpec spec = make_spec(req, {}, CancelToken());
    auto sh = spec.shared;
    sh->stream = true;
    sched_->submit(std::move(spec));
    return std::make_unique<StreamImpl>(sh);
  }

  std::vector<std::unique_ptr<RequestStream>> submit(
      const std::vector<PreparedRequest>& reqs) override {
    std::vector<RequestSpec> specs;
    std::vector<std::unique_ptr<RequestStream>> out;
    for (const PreparedRequest& r : reqs) {
      specs.push_back(make_spec(r, {}, CancelToken()));
      specs.back().shared->stream = true;
      out.push_back(std::make_unique<StreamImpl>(specs.back().shared));
    }
    sched_->submit(std::move(specs));
    return out;
  }

  std::unique_ptr<RequestStream> submit(const Prompt& prompt,
                                        const GenerateOptions& opts) override {
    PreparedRequest req;
    try {
      req = prepare(prompt, opts);
    } catch (const Error& e) {  // the stream's one event is the result
      auto sh = std::make_shared<RequestShared>();
      sh->stream = true;
      sh->result = error_result(e.what());
      publish_result(*sh, "");
      return std::make_unique<StreamImpl>(sh);
    }
    return submit(req);
  }

  std::vector<int32_t> tokenize(std::string_view text, bool add_special) const override {
    if (!tokenizer_) fail_arg("this model directory has no tokenizer.json");
    return tokenizer_->encode(text, add_special);
  }
  std::string detokenize(const std::vector<int32_t>& ids) const override {
    if (!tokenizer_) return "";
    return tokenizer_->decode(ids, true);
  }
  std::string apply_chat_template(const std::vector<ChatMessage>& messages,
                                  bool add_generation_prompt) const override {
    return render_chat(messages, add_generation_prompt);
  }
  EngineStats stats() const override { return sched_->stats(); }

 private:
  std::vector<int32_t> prompt_ids(const Prompt& p, bool add_special) const {
    if (const auto* ids = std::get_if<std::vector<int32_t>>(&p)) {
      check_prompt_ids(*ids, info().vocab_size, "prompt");
      return *ids;
    }
    if (!tokenizer_)
      throw RequestError(
          "prompt", "this model directory has no tokenizer.json: pass token ids instead of text");
    auto ids = tokenizer_->encode(std::get<std::string>(p), add_special);
    if (ids.empty()) throw RequestError("prompt", "the prompt is empty");
    check_tokenized_ids(ids, info().vocab_size, "prompt", *tokenizer_);
    return ids;
  }

  // prepare() once the options have passed validate(): max_tokens, the context, the stop ids.
  PreparedRequest prepare_checked(std::vector<int32_t> ids, const GenerateOptions& g,
                                  const std::string& field) const {
    check_not_embedding_only(info().bidirectional, "generate");
    PreparedRequest r;
    const int n = static_cast<int>(ids.size());
    r.prompt = std::move(ids);
    r.options = g;
    r.options.max_tokens = resolve_max_tokens(g, n, context_, field);
    r.options.max_tokens_to_context = false;
    check_context(n, r.options.max_tokens, context_, field);
    r.stop_ids = stop_ids_for(g, eos_);
    return r;
  }

  PreparedClassify prepare_checked(const Prompt& prompt, const ClassifyOptions& o) const {
    check_not_embedding_only(info().bidirectional, "classify");
    PreparedClassify r;
    r.prompt = prompt_ids(prompt, o.add_special_tokens);
    check_classify_context(static_cast<int>(r.prompt.size()), context_);
    r.options = o;
    return r;
  }

  // Tools and tool turns as the template takes them, or by the JSON convention where it takes
  // none (chat/chat_tools.h).
  std::string render_chat(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                          const std::string& tools = "") const {
    if (!chat_template_)
      throw RequestError("messages",
                         "this model directory has no chat template (tokenizer_config.json "
                         "chat_template)");
    ChatTemplateInputs in =
        chat_template_inputs(messages, tools, template_tools_, template_context_);
    return tessera::apply_chat_template(*chat_template_, in.messages, add_generation_prompt,
                                        in.context);
  }

  RequestSpec make_spec(PreparedRequest req, TokenCallback cb, const CancelToken& cancel) const {
    auto shared = std::make_shared<RequestShared>();
    shared->cancel = cancel;
    const OutputConstraint c = req.options.constraint;
    RequestSpec spec =
        generate_request(std::move(req.prompt), req.options, std::move(req.stop_ids),
                         tokenizer_ ? std::make_unique<DetokenizerStream>(*tokenizer_) : nullptr,
                         std::move(cb), token_text_fn(), std::move(shared));
    if (c.kind != OutputConstraint::Kind::none) {
      try {  // compiled by prepare() already: a cache hit unless evicted since
        spec.grammar = constraints_->get(c);
      } catch (const Error& e) {
        spec.error = e.what();
      }
    }
    return spec;
  }

  // A request that fails on its own input, without reaching the scheduler.
  GenerateResult error_result(const std::string& error) const {
    GenerateResult r;
    r.finish_reason = FinishReason::error;
    r.error = error;
    const MemoryTracker& t = memory_tracker(backend_->device());
    r.metrics.peak_memory_bytes = t.peak();
    r.metrics.active_memory_bytes = t.active();
    r.metrics.device = backend_->name();
    r.metrics.compute = dtype_name(backend_->act_dtype());
    return r;
  }

  static GenerateResult wait(RequestShared& sh) {
    std::unique_lock<std::mutex> lk(sh.mu);
    sh.cv.wait(lk, [&] { return sh.done; });
    return sh.result;
  }

  GenerateResult run(RequestSpec spec) {
    auto sh = spec.shared;
    sched_->submit(std::move(spec));
    return wait(*sh);
  }

  std::vector<ClassifyResult> run_classify(std::vector<PreparedClassify> reqs,
                                           const CancelToken& cancel) {
    std::vector<std::shared_ptr<RequestShared>> shared;
    std::vector<RequestSpec> specs;
    for (PreparedClassify& r : reqs) {
      shared.push_back(std::make_shared<RequestShared>());
      shared.back()->cancel = cancel;
      specs.push_back(
          classify_request(std::move(r.prompt), r.options, token_text_fn(), shared.back()));
    }
    sched_->submit(std::move(specs));
    std::vector<ClassifyResult> out;
    for (auto& sh : shared) {
      wait(*sh);
      std::lock_guard<std::mutex> lk(sh->mu);
      ClassifyResult c = std::move(sh->classify);
      if (c.error.empty() && sh->result.finish_reason == FinishReason::error)
        c.error = sh->result.error;
      if (c.error.empty() && sh->result.finish_reason == FinishReason::cancelled)
        c.error = "cancelled";
      out.push_back(std::move(c));
    }
    return out;
  }

  // Classify's and embed's: requests and prompt tokens, over the call's time.
  template <typename Result>
  void prompt_metrics(const std::vector<Result>& out, std::chrono::steady_clock::time_point t0,
                      BatchMetrics& m) const {
    m = BatchMetrics{};
    m.requests = static_cast<int>(out.size());
    for (const auto& c : out) m.prompt_tokens += c.prompt_tokens;
    finish_batch_metrics(m, t0);
  }

  // The weights, and the tokenizer and chat template when the directory has them.
  void load_files(const EngineOptions& o) {
    dir_ = std::make_unique<ModelDir>(o.model_dir);
    LoadOptions lo;
    lo.dtype = o.dtype;
    lo.quantize_bits = o.quantize;
    if (o.progress) lo.progress = load_progress_printer();
    model_ = load_model(*dir_, *backend_, lo);
    dir_->release_pages();  // the backend holds its own copy now (RSS, not correctness)
    if (!dir_->gguf())      // a sentence-transformers directory's pooling, Dense and Normalize
      st_ = load_sentence_transformers(o.model_dir, model_->info().hidden_size);
    if (o.progress) std::fprintf(stderr, "\n");
    // A GGUF file's tokenizer and template: the Hugging Face files beside it when there are
    // (they win), else its own metadata's.
    std::string files = o.model_dir;
    if (dir_->gguf()) {
      files = fs::path(o.model_dir).parent_path().string();
      if (files.empty()) files = ".";
    }
    const bool beside = fs::exists(fs::path(files) / "tokenizer.json");
    if (beside) tokenizer_ = Tokenizer::load(files);
    std::string tmpl = find_chat_template_source(files);
    if (!beside && dir_->gguf() && dir_->gguf()->has("tokenizer.ggml.model")) {
      tokenizer_ = tokenizer_from_gguf(*dir_->gguf());
      if (tmpl.empty()) tmpl = tokenizer_->chat_template();
      template_context_ = {{"bos_token", tokenizer_->bos_token()},
                           {"eos_token", tokenizer_->eos_token()}};
    } else if (!tmpl.empty()) {
      template_context_ = chat_template_special_tokens(files);
    }
    if (!tmpl.empty()) chat_template_ = std::make_unique<ChatTemplate>(tmpl);
    template_tools_ = template_tool_support(tmpl);
  }

  std::vector<int32_t> find_eos_set() const {
    std::optional<int32_t> tokenizer_eos;
    std::vector<int32_t> end_of_turn;
    if (tokenizer_) {
      tokenizer_eos = tokenizer_->eos_id();
      for (const char* t : end_of_turn_tokens())
        if (auto id = tokenizer_->token_to_id(t)) end_of_turn.push_back(*id);
    }
    return eos_set(info().eos_token_ids, tokenizer_eos, end_of_turn, info().vocab_size);
  }

  // The KV pool, sized by the sizing policy (engine_policy.h) within the memory limit.
  void make_pool(const EngineOptions& o, const SchedulerOptions& so, bool gpu) {
    const MemoryTracker& tracker = memory_tracker(backend_->device());
    KvPoolOptions po;
    po.block_size = 16;
    po.max_seqs = so.max_seqs;
    po.max_step_tokens = so.max_batch_tokens;
    po.max_context = context_;
    KvSizing k;
    k.requested = o.kv_memory;
    k.full = KvPool::bytes_for(model_->kv_spec(), po);
    k.gpu = gpu;
    k.activations = model_->scratch_bytes(so.max_batch_tokens, so.max_seqs);
    k.in_use = tracker.active();
    k.memory_limit = o.memory_limit;
    k.device_free = backend_->device_free_bytes();
    k.host_memory = static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
    po.budget_bytes = kv_pool_bytes(k);
    pool_ = std::make_unique<KvPool>(*backend_, model_->kv_spec(), po);
    check_memory_limit(o.memory_limit, tracker.active(), k.activations, info().weight_bytes,
                       pool_->bytes());
  }

  // One greedy request of 8 prompt tokens and 4 new ones, so that the first real request does
  // not pay for what a GPU does once: loading the kernels' modules, cuBLASLt's plans, the
  // sampler's buffers and the decode graph of one sequence (eager, captured, replayed). The
  // prompt fills no KV block (16 positions), so the prefix cache keeps nothing of it, and the
  // scheduler's counters start at zero afterwards.
  // Before it, prefills of 16, 32, ..., 512 tokens straight through the model on the scheduler's
  // pool (idle until the first request; nothing enters the prefix cache): cuBLASLt loads a GEMM
  // kernel the first time it runs it, which the first prompt of each new length would pay in its
  // time to first token (bench/NOTES-cuda.md has the measurement); other lengths take these
  // lengths' GEMM algorithms (lt_gemm.cpp).
  void warm_up() {
    if (context_ < 2) return;
    auto ids = [&](int n) {  // 1, 2, ..., n (mod the vocabulary)
      std::vector<int32_t> t(static_cast<size_t>(n));
      for (size_t i = 0; i < t.size(); ++i)
        t[i] = static_cast<int32_t>((i + 1) % static_cast<size_t>(info().vocab_size));
      return t;
    };
    const int longest = std::min({512, sched_->options().max_batch_tokens, context_ - 1});
    for (int m = 16; m <= longest; m *= 2) {
      SequenceKv kv(*pool_);
      if (!kv.reserve(m)) break;
      const std::vector<int32_t> prompt = ids(m);
      BatchEntry e;
      e.kv = &kv;
      e.tokens = prompt;
      e.logits_last = true;
      HostBatch hb = build_batch(*pool_, std::span<const BatchEntry>(&e, 1));
      hb.greedy_ids = true;  // as a greedy request's prompt runs
      model_->forward(hb, pool_->layers());
      kv.release_all();  // the next prefill's writes to these blocks follow on the same stream
    }
    backend_->synchronize();                  // a failure shows here, at load
    if (info().bidirectional) return;         // an embedding model: it generates nothing
    const int n = std::min(8, context_ / 2);  // a context of 8 positions or fewer: half of it
    GenerateOptions g;
    g.max_tokens = std::min(4, context_ - n);
    g.ignore_eos = true;
    g.sampling.temperature = 0.f;
    const GenerateResult r = generate(Prompt{ids(n)}, g, {}, CancelToken());
    if (r.finish_reason == FinishReason::error)
      fail(ErrorKind::internal, "the warm-up request at load failed: " + r.error);
    sched_->reset_stats();
  }

  std::string token_text(int32_t id) const {
    std::vector<int32_t> one{id};
    return tokenizer_->decode(one, false);
  }
  // Token text for logprobs; empty without a tokenizer.
  TokenTextFn token_text_fn() const {
    if (!tokenizer_) return {};
    return [this](int32_t id) { return token_text(id); };
  }

  void finish_batch_metrics(BatchMetrics& m, std::chrono::steady_clock::time_point t0) const {
    m.total_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double s = m.total_ms / 1e3;
    if (s > 0) {
      m.requests_per_s = m.requests / s;
      m.prompt_tokens_per_s = m.prompt_tokens / s;
      m.generated_tokens_per_s = m.generated_tokens / s;
    }
    m.peak_memory_bytes = memory_tracker(backend_->device()).peak();
  }

  EngineOptions opts_;
  std::unique_ptr<ComputeBackend> backend_;
  std::unique_ptr<ModelDir> dir_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<ChatTemplate> chat_template_;
  TemplateToolSupport template_tools_;
  StPipeline st_;
  std::unique_ptr<ConstraintCache> constraints_;
  nlohmann::ordered_json template_context_ = nlohmann::ordered_json::object();  // bos_token, ...
  std::vector<int32_t> eos_;
  int context_ = 0;
  std::unique_ptr<KvPool> pool_;
  std::unique_ptr<Scheduler> sched_;
};

}  // namespace

std::unique_ptr<Engine> Engine::load(const EngineOptions& opts) {
  return std::make_unique<EngineImpl>(opts);
}

}  // namespace tessera
