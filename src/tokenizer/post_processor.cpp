#include "tokenizer/post_processor.h"

#include <map>
#include <string>

namespace tessera::tok {

namespace {

class NoopProcessor final : public PostProcessor {
 public:
  void add_special_tokens(std::vector<int32_t>&) const override {}
};

// ref: processors/template.rs. `parts` holds the single-sequence template: a run of ids, or the
// sequence itself (marked by an empty optional).
class TemplateProcessor final : public PostProcessor {
 public:
  struct Part {
    bool is_sequence;
    std::vector<int32_t> ids;
  };
  explicit TemplateProcessor(std::vector<Part> parts) : parts_(std::move(parts)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const Part& p : parts_) {
      if (p.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), p.ids.begin(), p.ids.end());
      }
    }
    ids.swap(out);
  }

 private:
  std::vector<Part> parts_;
};

// ref: processors/bert.rs and roberta.rs (single sequence: cls $A sep).
class ClsSepProcessor final : public PostProcessor {
 public:
  ClsSepProcessor(int32_t cls, int32_t sep) : cls_(cls), sep_(sep) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), cls_);
    ids.push_back(sep_);
  }

 private:
  int32_t cls_, sep_;
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> v)
      : steps_(std::move(v)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    for (const auto& p : steps_) p->add_special_tokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

int32_t token_pair_id(const JNode& n) {  // ["[CLS]", 101]
  if (!n.is_array()) n.fail("expected [token, id]");
  simdjson::dom::array a = n.e.get_array();
  if (a.size() != 2) n.fail("expected [token, id]");
  return static_cast<int32_t>(n.index(1, a.at(1)).integer());
}

std::unique_ptr<PostProcessor> make_template(const JNode& node) {
  std::map<std::string, std::vector<int32_t>> specials;
  if (auto st = node.get("special_tokens")) {
    if (!st->is_object()) st->fail("expected an object");
    for (auto kv : st->e.get_object()) {
      JNode entry{kv.value, st->file, st->path + "." + std::string(kv.key)};
      JNode ids = entry.at("ids");
      if (!ids.is_array()) ids.fail("expected an array of ids");
      std::vector<int32_t> v;
      size_t i = 0;
      for (JElem x : ids.e.get_array())
        v.push_back(static_cast<int32_t>(ids.index(i++, x).integer()));
      specials[std::string(kv.key)] = std::move(v);
    }
  }
  JNode single = node.at("single");
  if (!single.is_array()) single.fail("expected an array of template pieces");
  std::vector<TemplateProcessor::Part> parts;
  size_t i = 0;
  for (JElem x : single.e.get_array()) {
    JNode piece = single.index(i++, x);
    if (auto sp = piece.get("SpecialToken")) {
      std::string name(sp->str("id"));
      auto it = specials.find(name);
      if (it == specials.end()) sp->fail("special token \"" + name + "\" is not in special_tokens");
      parts.push_back({false, it->second});
    } else if (auto seq = piece.get("Sequence")) {
      // HF's single template may only name sequence A.
      if (seq->str("id") != "A") seq->fail("a single-sequence template can only use sequence A");
      parts.push_back({true, {}});
    } else {
      piece.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
  }
  return std::make_unique<TemplateProcessor>(std::move(parts));
}

}  // namespace

std::unique_ptr<PostProcessor> PostProcessor::from_json(const JNode& node) {
  std::string_view type = node.type();
  if (type == "TemplateProcessing") return make_template(node);
  if (type == "ByteLevel") return std::make_unique<NoopProcessor>();
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    return std::make_unique<ClsSepProcessor>(token_pair_id(node.at("cls")),
                                             token_pair_id(node.at("sep")));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PostProcessor>> steps;
    JNode list = node.at("processors");
    if (!list.is_array()) list.fail("expected an array");
    size_t i = 0;
    for (JElem child : list.e.get_array()) steps.push_back(from_json(list.index(i++, child)));
    return std::make_unique<SequenceProcessor>(std::move(steps));
  }
  node.unsupported("post-processor type \"" + std::string(type) + "\"");
}

}  // namespace tessera::tok
