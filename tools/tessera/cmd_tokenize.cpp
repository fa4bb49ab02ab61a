// tessera tokenize --tokenizer PATH (--text STR | --jsonl FILE) [--special] [--json]
// tessera detokenize --tokenizer PATH --ids 1,2,3 [--skip-special] [--json]
//
// PATH is a tokenizer.json or a directory holding one. JSONL input lines are {"text": ...};
// each gives one output line, in order: {"ids": [...]} with --json, else the ids comma-separated.
// detokenize prints decode(ids) (special tokens kept unless --skip-special, as tokenizers'
// decode defaults to), followed by a newline; with --json, {"text": ...}.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.h"

namespace tessera::cli {

namespace {

std::string format_ids(const std::vector<int32_t>& ids, bool json) {
  std::string out = json ? "{\"ids\":[" : "";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(ids[i]);
  }
  if (json) out += "]}";
  out.push_back('\n');
  return out;
}

void write_out(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
}

int tokenize_jsonl(const Tokenizer& tok, const std::string& file, bool special, bool json) {
  std::ifstream in;
  std::istream* src = &std::cin;
  if (file != "-") {
    in.open(file, std::ios::binary);
    if (!in) fail(ErrorKind::io, "--jsonl: cannot open '" + file + "'");
    src = &in;
  }
  std::string line, out;
  size_t n = 0;
  while (std::getline(*src, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    check_json_depth(line, "--jsonl " + file + ":" + std::to_string(n));
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("text") || !j["text"].is_string()) {
      fail_arg("--jsonl " + file + ":" + std::to_string(n) + ": expected {\"text\": string}");
    }
    try {
      out += format_ids(tok.encode(j["text"].get_ref<const std::string&>(), special), json);
    } catch (const Error& e) {
      fail_arg("--jsonl " + file + ":" + std::to_string(n) + ": " + e.what());
    }
    if (out.size() > (1 << 16)) {
      write_out(out);
      out.clear();
    }
  }
  write_out(out);
  return 0;
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  {
    auto* cmd = app.add_subcommand("tokenize", "encode text to token ids with a tokenizer.json");
    struct Args {
      std::string tokenizer, text, jsonl;
      bool special = false, json = false;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json or a directory holding one")
        ->required();
    auto* text = cmd->add_option("--text", a->text, "the text to encode");
    auto* jsonl = cmd->add_option("--jsonl", a->jsonl,
                                  "a file of {\"text\": ...} lines (- for stdin); one output "
                                  "line each");
    cmd->add_flag("--special", a->special, "add the post-processor's special tokens (BOS)");
    cmd->add_flag("--json", a->json, "print {\"ids\": [...]} lines");
    cmd->callback([a, text, jsonl] {
      run_command([&] {
        if ((text->count() == 0) == (jsonl->count() == 0))
          fail_arg("give one of --text or --jsonl");
        auto tok = Tokenizer::load(a->tokenizer);
        if (jsonl->count()) return tokenize_jsonl(*tok, a->jsonl, a->special, a->json);
        write_out(format_ids(tok->encode(a->text, a->special), a->json));
        return 0;
      });
    });
  }
  {
    auto* cmd = app.add_subcommand("detokenize", "decode token ids to text with a tokenizer.json");
    struct Args {
      std::string tokenizer, ids;
      bool skip = false, json = false;
    };
    auto a = std::make_shared<Args>();
    cmd->add_option("--tokenizer", a->tokenizer, "tokenizer.json or a directory holding one")
        ->required();
    cmd->add_option("--ids", a->ids, "comma-separated token ids")->required();
    cmd->add_flag("--skip-special", a->skip, "drop special tokens (skip_special_tokens=True)");
    cmd->add_flag("--json", a->json, "print {\"text\": ...}");
    cmd->callback([a] {
      run_command([&] {
        std::vector<int32_t> ids = parse_id_list(a->ids, "--ids");
        auto tok = Tokenizer::load(a->tokenizer);
        for (int32_t id : ids) {
          if (id < 0 || id >= tok->vocab_size() || tok->id_to_token(id).empty()) {
            fail_arg("--ids: " + std::to_string(id) +
                     " is not a token id of this tokenizer "
                     "(vocabulary size " +
                     std::to_string(tok->vocab_size()) + ")");
          }
        }
        std::string text = tok->decode(ids, a->skip);
        if (a->json) {
          write_out(nlohmann::json{{"text", text}}.dump() + "\n");
        } else {
          write_out(text + "\n");
        }
        return 0;
      });
    });
  }
}

}  // namespace tessera::cli
