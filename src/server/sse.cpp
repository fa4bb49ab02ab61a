#include "server/sse.h"

namespace tessera::server {

using Item = ChoiceRun::Item;

std::shared_ptr<ChoiceRun> start_choices(RequestContext& ctx,
                                         const std::vector<PreparedRequest>& prompts, int n) {
  return std::make_shared<ChoiceRun>(
      ctx.state, ctx.endpoint, make_choices(prompts, n),
      ConnectionWatch::find(ctx.req.remote_addr, ctx.req.remote_port, ctx.req.local_port),
      ctx.t_start);
}

namespace {

class ChunkStream : public StreamWriter {
 public:
  explicit ChunkStream(StreamFormat fmt) : w_(std::move(fmt)) {}
  std::string event(int choice, const RequestStream::Event& ev) override {
    return w_.event(choice, ev);
  }
  std::string finish() override { return w_.finish(); }

 private:
  ChunkWriter w_;
};

}  // namespace

void stream_response(RequestContext& ctx, std::shared_ptr<ChoiceRun> run, StreamFormat fmt) {
  fmt.choice_prompt.clear();
  for (const auto& s : run->specs()) fmt.choice_prompt.push_back(s.prompt);
  stream_events(ctx, std::move(run),
                [&fmt] { return std::make_shared<ChunkStream>(std::move(fmt)); });
}

void stream_events(RequestContext& ctx, std::shared_ptr<ChoiceRun> run,
                   const std::function<std::shared_ptr<StreamWriter>()>& make_writer) {
  std::vector<Item> first;
  std::vector<char> seen(run->size(), 0);
  size_t unseen = run->size();
  while (unseen > 0) {
    if (run->should_cancel()) run->cancel_all();
    const size_t before = first.size();
    run->poll(first, 100);
    for (size_t i = before; i < first.size(); ++i)
      if (!seen[first[i].choice]) seen[first[i].choice] = 1, --unseen;
  }
  for (const Item& it : first) {
    const GenerateResult& r = it.ev.result;
    if (it.ev.done && r.finish_reason == FinishReason::error && r.ids.empty()) {
      run->cancel_all();
      throw api_error_from_failed(r.error);
    }
  }
  if (auto e = run->first_error(); e && e->status >= 499) throw *e;  // client gone or shutting down

  std::shared_ptr<StreamWriter> writer = make_writer();
  auto pending = std::make_shared<std::vector<Item>>(std::move(first));
  std::shared_ptr<void> in_flight = ctx.in_flight;
  ctx.res.status = 200;
  ctx.res.set_header("Cache-Control", "no-cache");
  ctx.res.set_header("X-Accel-Buffering", "no");
  ctx.res.set_chunked_content_provider(
      "text/event-stream", [run, writer, pending, in_flight](size_t, httplib::DataSink& sink) {
        // httplib calls this outside the handler's try block: nothing may escape it.
        try {
          std::vector<Item> items;
          items.swap(*pending);
          if (items.empty()) {
            if (run->should_cancel()) run->cancel_all();
            run->poll(items, 100);
          }
          std::string out;
          for (const Item& it : items) out += writer->event(it.choice, it.ev);
          const bool end = run->all_done();
          if (end) out += writer->finish();
          if (!out.empty() && !sink.write(out.data(), out.size())) {
            run->cancel_all();
            return false;
          }
          if (end) sink.done();
          return true;
        } catch (...) {
          run->cancel_all();
          return false;
        }
      });
}

}  // namespace tessera::server
